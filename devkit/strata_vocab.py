"""Small sample vocabularies of the strata tests and benchmarks: a MeSH descriptor XML (six
descriptors: diseases, drugs and a check tag) and a UniProt TSV (four human proteins), in the
formats ``biorag.strata.vocab.load_vocabulary`` reads. Written into a file where needed.
"""

from __future__ import annotations

MESH_XML = """<?xml version="1.0"?>
<DescriptorRecordSet LanguageCode="eng">
 <DescriptorRecord><DescriptorUI>D003924</DescriptorUI>
  <DescriptorName><String>Diabetes Mellitus, Type 2</String></DescriptorName>
  <TreeNumberList><TreeNumber>C18.452.394.750.149</TreeNumber></TreeNumberList>
  <ConceptList><Concept><TermList>
   <Term><String>Diabetes Mellitus, Type 2</String></Term>
   <Term><String>Type 2 Diabetes</String></Term><Term><String>T2D</String></Term>
  </TermList></Concept></ConceptList></DescriptorRecord>
 <DescriptorRecord><DescriptorUI>D003324</DescriptorUI>
  <DescriptorName><String>Coronary Artery Disease</String></DescriptorName>
  <TreeNumberList><TreeNumber>C14.280.647.250.260</TreeNumber></TreeNumberList>
  <ConceptList><Concept><TermList>
   <Term><String>Coronary Artery Disease</String></Term><Term><String>CAD</String></Term>
  </TermList></Concept></ConceptList></DescriptorRecord>
 <DescriptorRecord><DescriptorUI>D001943</DescriptorUI>
  <DescriptorName><String>Breast Neoplasms</String></DescriptorName>
  <TreeNumberList><TreeNumber>C04.588.180</TreeNumber></TreeNumberList>
  <ConceptList><Concept><TermList>
   <Term><String>Breast Neoplasms</String></Term><Term><String>Breast Cancer</String></Term>
  </TermList></Concept></ConceptList></DescriptorRecord>
 <DescriptorRecord><DescriptorUI>D008687</DescriptorUI>
  <DescriptorName><String>Metformin</String></DescriptorName>
  <TreeNumberList><TreeNumber>D02.078.370.141.450</TreeNumber></TreeNumberList>
  <ConceptList><Concept><TermList>
   <Term><String>Metformin</String></Term><Term><String>Glucophage</String></Term>
  </TermList></Concept></ConceptList></DescriptorRecord>
 <DescriptorRecord><DescriptorUI>D068877</DescriptorUI>
  <DescriptorName><String>Trastuzumab</String></DescriptorName>
  <TreeNumberList><TreeNumber>D27.505.954.248</TreeNumber></TreeNumberList>
  <ConceptList><Concept><TermList>
   <Term><String>Trastuzumab</String></Term><Term><String>Herceptin</String></Term>
  </TermList></Concept></ConceptList></DescriptorRecord>
 <DescriptorRecord><DescriptorUI>D005260</DescriptorUI>
  <DescriptorName><String>Female</String></DescriptorName>
  <TreeNumberList><TreeNumber>G01.100</TreeNumber></TreeNumberList>
 </DescriptorRecord>
</DescriptorRecordSet>
"""

UNIPROT_TSV = (
    "Entry\tEntry Name\tProtein names\tGene Names\tOrganism\n"
    "P04626\tERBB2_HUMAN\tReceptor tyrosine-protein kinase erbB-2 (EC 2.7.10.1) "
    "(Proto-oncogene Neu)\tERBB2 HER2 MLN19 NEU\tHomo sapiens\n"
    "P27708\tPYR1_HUMAN\tMultifunctional protein CAD\tCAD\tHomo sapiens\n"
    "Q9Y6K9\tNEMO_HUMAN\tNF-kappa-B essential modulator\tIKBKG NEMO\tHomo sapiens\n"
    "P04637\tP53_HUMAN\tCellular tumor antigen p53 (Tumor suppressor p53)\tTP53 P53\t"
    "Homo sapiens\n"
)
