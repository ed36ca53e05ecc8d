#!/usr/bin/env bash
# Renders the README's screenshots of `sessiontree browse` from a real run: the browser runs
# in tmux with HOME=HOME_DIR (sessions under HOME_DIR/.pi/agent/sessions), the pane is captured with its colours
# (capture-pane -e), turned into HTML by aha and photographed by headless Chromium.
#   bash docs/browse-screenshot.sh HOME_DIR SESSIONTREE_BINARY
set -euo pipefail
home=$1
bin=$2
out=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
sock=$work/tmux.sock
trap 'tmux -S "$sock" kill-server 2>/dev/null || true; rm -rf "$work"' EXIT
tmux -S "$sock" -f /dev/null new-session -d -s t -x 120 -y 32 \
  "cd /; TERM=xterm-256color HOME=$home PI_CODING_AGENT_DIR= $bin browse; sleep 100"
sleep 1.5
tmux -S "$sock" send-keys -t t -l "energy"; sleep 1
tmux -S "$sock" capture-pane -e -N -p -t t > "$work/list.ansi"
tmux -S "$sock" send-keys -t t Enter; sleep 0.5
tmux -S "$sock" send-keys -t t M-Up; sleep 0.3
tmux -S "$sock" send-keys -t t Down; sleep 0.3
tmux -S "$sock" send-keys -t t Enter; sleep 0.5
tmux -S "$sock" capture-pane -e -N -p -t t > "$work/tree.ansi"
tmux -S "$sock" send-keys -t t C-c
for v in list tree; do
  {
    echo '<!doctype html><meta charset="utf-8"><style>'
    echo 'body{margin:0;background:#111}pre{margin:0;padding:10px;font:14px/17px "DejaVu Sans Mono",monospace;color:#ddd}'
    echo '</style><pre>'
    aha --no-header --black < "$work/$v.ansi"
    echo '</pre>'
  } > "$work/$v.html"
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=1032,565 --screenshot="$out/browse-$v.png" "file://$work/$v.html" 2>/dev/null
done
ls -la "$out"/browse-*.png
