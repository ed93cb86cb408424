"""CLAIMS' component metrics (paper 4.3, appendix L): relation extraction and summarization
(:mod:`.metrics`), graph vs semantic communities (:mod:`.communities`), all of them over one run
(:mod:`.evaluate`) and over a benchmark (:mod:`.benchmark`, ``biorag eval components``)."""
