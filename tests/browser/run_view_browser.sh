#!/usr/bin/env bash
# Runs test_view_browser.py with a Python that has selenium: Debian's /usr/bin/python3 (python3-selenium,
# which scripts/setup.sh --browser installs) when the python3 on PATH is another one (pyenv, a venv).
here=$(dirname "$0")
for py in /usr/bin/python3 python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import selenium' 2>/dev/null; then exec "$py" "$here/test_view_browser.py" "$@"; fi
done
exec python3 "$here/test_view_browser.py" "$@"  # says what is missing, and skips or fails
