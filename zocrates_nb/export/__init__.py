"""Ready for writing: an answer's references as BibTeX, CSL-JSON and Pandoc/Quarto Markdown (issue 23, item 4).

Owns the step from "an answer cites these papers" to files a writer can use: stable citation keys
(Better BibTeX's where the library has them, generated ones otherwise), CSL-JSON items, a ``.bib``
written through pybtex, and the answer's Markdown with ``[@citekey]`` citations. Everything here is
pure (records in, text out); the workbench gathers the cited papers' metadata and writes the files.
It imports only the package-root vocabulary, never a pipeline stage.
"""
