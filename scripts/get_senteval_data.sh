#!/usr/bin/env bash
# Download SentEval's downstream and probing data and lay it out as evaluate.py expects:
#   <data_dir>/senteval/{MR,CR,SUBJ,MPQA,SST,TREC,MRPC,SICK,SNLI,STS}/...   (SentEval's get_transfer_data.bash layout)
#   <data_dir>/probing/<task>.txt                                          (SentEval's probing files)
# Needs internet, git, curl, unzip and perl (SentEval's script runs the Moses tokenizer); MRPC comes from SentEval's S3 copy.
# It runs SentEval's own download script, which fetches every dataset from its canonical source.
# Usage: scripts/get_senteval_data.sh [data_dir]   (default: $SENTENCE_DATA, else ./data)
set -euo pipefail

DATA_DIR="${1:-${SENTENCE_DATA:-data}}"
SENTEVAL_REPO="https://github.com/facebookresearch/SentEval.git"
SENTEVAL_COMMIT="${SENTEVAL_COMMIT:-5d6dc11}"

for tool in git curl unzip perl; do
  command -v "$tool" >/dev/null || { echo "error: $tool is needed: install it and re-run" >&2; exit 1; }
done

mkdir -p "$DATA_DIR"
DATA_DIR="$(cd "$DATA_DIR" && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

echo "cloning SentEval into $WORK"
git clone --quiet "$SENTEVAL_REPO" "$WORK/SentEval"
if ! git -C "$WORK/SentEval" checkout --quiet "$SENTEVAL_COMMIT" 2>/dev/null; then
  echo "error: SentEval commit $SENTEVAL_COMMIT not found in $SENTEVAL_REPO: nothing was run; set SENTEVAL_COMMIT to a commit that exists there and re-run" >&2
  exit 1
fi

echo "downloading the transfer tasks (SentEval's data/downstream/get_transfer_data.bash)"
(cd "$WORK/SentEval/data/downstream" && bash get_transfer_data.bash)

mkdir -p "$DATA_DIR/senteval"
for task in MR CR SUBJ MPQA SST TREC MRPC SICK SNLI STS; do
  src="$WORK/SentEval/data/downstream/$task"
  if [ -d "$src" ]; then
    rm -rf "$DATA_DIR/senteval/$task"
    mv "$src" "$DATA_DIR/senteval/$task"
  else
    echo "warning: $task was not downloaded (see the messages above)" >&2
  fi
done

echo "copying the probing tasks (SentEval's data/probing)"
mkdir -p "$DATA_DIR/probing"
for f in "$WORK"/SentEval/data/probing/*.txt; do
  [ -e "$f" ] && cp "$f" "$DATA_DIR/probing/"
done
if ! ls "$DATA_DIR"/probing/*.txt >/dev/null 2>&1; then
  echo "warning: no probing files found in SentEval's repository: run its data/probing download step by hand" >&2
fi

echo "done: SENTENCE_DATA=$DATA_DIR python evaluate.py encoder=bow_glove tasks=all"
