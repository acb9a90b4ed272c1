"""Where the configs (``conf/``) and the shipped assets (``assets/``) lie: at the top of the repository in a clone,
beside the packages when installed (the wheel ships them as ``sentence_lab/conf`` and ``sentence_lab/assets``)."""
from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
HOME = PACKAGE if (PACKAGE / "conf").is_dir() else PACKAGE.parent
CONF = HOME / "conf"
ASSETS = HOME / "assets"
