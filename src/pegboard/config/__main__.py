"""``python -m pegboard.config [README.md]``: print, or embed, the configuration reference."""

import sys
from pathlib import Path

from pegboard.config.reference import embed_reference, render_reference

if len(sys.argv) > 1:
    target = Path(sys.argv[1])
    target.write_text(embed_reference(target.read_text(encoding="utf-8")), encoding="utf-8")
else:
    sys.stdout.write(render_reference())
