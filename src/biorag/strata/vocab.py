"""Controlled vocabularies the user supplies: MeSH descriptor XML and UniProt TSV.

MeSH (``desc20XX.xml``): ``DescriptorRecordSet/DescriptorRecord`` with ``DescriptorUI``,
``DescriptorName/String`` and ``ConceptList/Concept/TermList/Term/String`` (synonyms). The
``TreeNumberList`` decides the type: ``C..`` -> Disease, ``D12.776..`` -> Protein, other
``D..`` -> Drug; descriptors in neither branch are skipped.

UniProt TSV (a search export) with columns ``Entry``, ``Protein names``, ``Gene Names``: each row
gives a Protein entry (``UNIPROT:<Entry>``; the first protein name, the bracketed alternatives
and the gene symbols as synonyms) and a Gene entry per primary symbol (``GENE:<symbol>``; the
other gene names as synonyms). Nothing is ever downloaded.
"""

from __future__ import annotations

import csv
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from biorag.errors import InputFormatError

ENTITY_TYPES = ("Gene", "Protein", "Drug", "Disease")


@dataclass(frozen=True)
class VocabEntry:
    """One controlled concept: its id, preferred name, type and synonyms."""

    id: str
    name: str
    type: str
    synonyms: tuple[str, ...] = ()

    def surfaces(self) -> list[str]:
        """The preferred name then the distinct synonyms."""
        seen: dict[str, str] = {}
        for s in (self.name, *self.synonyms):
            s = s.strip()
            if s and s.lower() not in seen:
                seen[s.lower()] = s
        return list(seen.values())


@dataclass
class Vocabulary:
    """Entries plus a case-insensitive surface index (name or synonym -> entries)."""

    entries: list[VocabEntry] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._by_surface: dict[str, list[int]] = {}
        self._by_id: dict[str, int] = {}
        for i, e in enumerate(self.entries):
            self._index(i, e)

    def _index(self, i: int, e: VocabEntry) -> None:
        self._by_id[e.id] = i
        for s in e.surfaces():
            idx = self._by_surface.setdefault(s.lower(), [])
            if i not in idx:
                idx.append(i)

    def add(self, entries: Iterable[VocabEntry]) -> None:
        for e in entries:
            if e.id in self._by_id:
                continue
            self.entries.append(e)
            self._index(len(self.entries) - 1, e)

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, entry_id: str) -> VocabEntry | None:
        i = self._by_id.get(entry_id)
        return None if i is None else self.entries[i]

    def lookup(self, surface: str, type_: str | None = None) -> list[VocabEntry]:
        """Entries whose name or a synonym equals ``surface`` (case-insensitive), of ``type_``."""
        out = [self.entries[i] for i in self._by_surface.get(surface.strip().lower(), [])]
        return [e for e in out if type_ is None or e.type == type_]

    def surfaces(self) -> list[tuple[str, VocabEntry]]:
        """Every (surface, entry) pair."""
        return [(s, e) for e in self.entries for s in e.surfaces()]


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _mesh_type(tree_numbers: list[str]) -> str | None:
    if any(t.startswith("C") for t in tree_numbers):
        return "Disease"
    if any(t.startswith("D12.776") for t in tree_numbers):
        return "Protein"
    if any(t.startswith("D") for t in tree_numbers):
        return "Drug"
    return None


def parse_mesh_xml(path: str | Path) -> list[VocabEntry]:
    """Disease, Drug and Protein entries from a MeSH descriptor XML file."""
    p = Path(path)
    try:
        root = ET.parse(p).getroot()
    except (ET.ParseError, OSError) as e:
        raise InputFormatError(f"{p} is not a readable MeSH descriptor XML file: {e}") from e
    if _local(root.tag) != "DescriptorRecordSet":
        raise InputFormatError(
            f"{p}: root element is <{_local(root.tag)}>, expected <DescriptorRecordSet> "
            "(a MeSH descriptor file such as desc2025.xml)"
        )
    out: list[VocabEntry] = []
    for rec in root.iter("DescriptorRecord"):
        ui = (rec.findtext("DescriptorUI") or "").strip()
        name = (rec.findtext("DescriptorName/String") or "").strip()
        if not ui or not name:
            raise InputFormatError(f"{p}: a DescriptorRecord lacks DescriptorUI or its name")
        trees = [t.text.strip() for t in rec.iter("TreeNumber") if t.text]
        type_ = _mesh_type(trees)
        if type_ is None:
            continue
        syns = [
            s.text.strip()
            for s in rec.findall("ConceptList/Concept/TermList/Term/String")
            if s.text and s.text.strip() and s.text.strip() != name
        ]
        out.append(VocabEntry(f"MESH:{ui}", name, type_, tuple(dict.fromkeys(syns))))
    return out


_PAREN = re.compile(r"\(([^()]*)\)")
_UNIPROT_COLUMNS = ("Entry", "Protein names", "Gene Names")


def parse_uniprot_tsv(path: str | Path) -> list[VocabEntry]:
    """Protein and Gene entries from a UniProt TSV export."""
    p = Path(path)
    try:
        with p.open(encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f, delimiter="\t")
            header = reader.fieldnames or []
            missing = [c for c in _UNIPROT_COLUMNS if c not in header]
            if missing:
                raise InputFormatError(
                    f"{p}: UniProt TSV needs columns {list(_UNIPROT_COLUMNS)}; missing {missing} "
                    f"(header: {header[:6]})"
                )
            rows = list(reader)
    except (OSError, UnicodeDecodeError) as e:
        raise InputFormatError(f"{p} is not a readable UniProt TSV file: {e}") from e
    out: list[VocabEntry] = []
    genes: dict[str, VocabEntry] = {}
    for row in rows:
        acc = (row.get("Entry") or "").strip()
        pnames = (row.get("Protein names") or "").strip()
        gnames = (row.get("Gene Names") or "").split()
        if not acc or not pnames:
            continue
        main = _PAREN.sub("", pnames).strip()
        alts = [a.strip() for a in _PAREN.findall(pnames) if a.strip()]
        out.append(
            VocabEntry(f"UNIPROT:{acc}", main, "Protein", tuple(dict.fromkeys(alts + gnames)))
        )
        if gnames and gnames[0] not in genes:
            genes[gnames[0]] = VocabEntry(f"GENE:{gnames[0]}", gnames[0], "Gene", tuple(gnames[1:]))
    return out + list(genes.values())


def load_vocabulary(
    mesh: str | Path | None = None, uniprot: str | Path | None = None
) -> Vocabulary:
    """A :class:`Vocabulary` from the given files (either may be omitted)."""
    vocab = Vocabulary()
    if mesh is not None:
        vocab.add(parse_mesh_xml(mesh))
    if uniprot is not None:
        vocab.add(parse_uniprot_tsv(uniprot))
    return vocab
