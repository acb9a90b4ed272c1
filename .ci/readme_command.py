"""Print the README's command in the first ```bash block after the line holding the given words, exactly as written:
.ci/run runs the README's test command as the README gives it, so the two cannot drift apart."""
import re
import sys
from pathlib import Path

text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
words = sys.argv[1]
if words not in text:
    sys.exit(f"README.md has no line with {words!r}: update .ci/run with the README")
block = re.search(r"```bash\n(.*?)\n```", text[text.index(words):], re.S)
if block is None:
    sys.exit(f"README.md has no ```bash block after {words!r}")
print(block.group(1).strip())
