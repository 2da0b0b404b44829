# bead: written by `bead setup`; `bead setup --uninstall` removes it.
# `claude` goes through the bead proxy when its health check answers within
# 1 second, and straight to the API when it does not, so a stopped proxy never
# blocks work. No credential is set here: your own login stays in use. The
# base URL carries the home's proxy token (read from a 0600 file at each
# start), which tells the proxy the request is yours.
# An alias named claude would shadow (bash) or break (zsh) the function, so it goes; one that runs claude
# with arguments (alias claude='claude --verbose') keeps them: the function passes them first.
__bead_alias=$(alias claude 2>/dev/null)
unalias claude 2>/dev/null
__bead_claude_args=""
if [ -n "$__bead_alias" ]; then
  __bead_def=${__bead_alias#alias }
  __bead_def=${__bead_def#claude=}
  eval "__bead_def=$__bead_def"
  case "$__bead_def" in
    claude) ;;
    "claude "*) __bead_claude_args=${__bead_def#claude } ;;
    *) echo "bead: your alias claude='$__bead_def' is replaced by bead's claude function (see ~/.bead/shell.sh)" >&2 ;;
  esac
fi
unset __bead_alias __bead_def
function __bead_claude {
  eval "command claude $__bead_claude_args \"\$@\""
}
function claude {
  if command -v curl >/dev/null 2>&1 \
     && curl -fsS -m 1 "http://@LISTEN@/bead/health" >/dev/null 2>&1; then
    ANTHROPIC_BASE_URL="http://@LISTEN@/$(cat "@TOKEN@" 2>/dev/null)" CLAUDE_CODE_GATEWAY_HINT_HEADERS=1 __bead_claude "$@"
  else
    echo "bead: the proxy is not answering at @LISTEN@; running claude without memory (see: bead status)" >&2
    __bead_claude "$@"
  fi
}
