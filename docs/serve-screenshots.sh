#!/usr/bin/env bash
# The README's pictures of `sessiontree serve`: a real server and headless Chromium (the
# browser test's corpus: the example session, a hostile one, a live one), rendered into
# docs/serve-list.png (the list searched as you type), docs/serve-session.png (an
# abandoned branch's entry) and docs/serve-context.png (what the model saw there).
#   bash docs/serve-screenshots.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SESSIONTREE_REQUIRE_BROWSER=1 SESSIONTREE_UPDATE_SCREENSHOT=1 \
  cargo test -q -p sessiontree-cli --test serve_browser -- --nocapture
ls -la docs/serve-list.png docs/serve-session.png docs/serve-context.png
