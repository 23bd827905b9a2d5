"""``workbook align``: do two runs train alike? ``compute`` (errors, thresholds, the judgement),
``runs`` (two run directories -> an alignment, alignment.json), ``plot``, ``junit``; the page's
cells are :mod:`workbook.report.alignment`'s, since the report renderer calls them."""
