"""``python -m mmsp_io``: the same command as the ``mmsp-sansio`` console script (09), an
application beside the library (``mmsp_io.cli``)."""

from mmsp_io.cli import main

raise SystemExit(main())
