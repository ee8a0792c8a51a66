"""Pure conversion: Zotero note HTML and paper records → Markdown, title, TOC, abstract, chunks.

No I/O and no clock here; the corpus (``zocrates_nb.corpus``) decides when and
where results are written. Import the submodules directly (``convert.convert``,
``convert.html`` …); this package stays import-cheap.
"""
