"""PDF to Markdown: the reader (``reader``), the page data it hands on (``pages``), the layout that
turns pages into structure (``layout``, pure), and the pictures read beside it
(``picture_reads``)."""
