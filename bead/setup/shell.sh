# bead: written by `bead setup`; `bead setup --uninstall` removes it.
# `claude` goes through the bead proxy when it answers within 2 seconds and
# proves it is this home's, and straight to the API when it does not, so a
# stopped proxy never blocks work. No credential is set here: your own login stays in use. The
# base URL carries the home's proxy token (read from a 0600 file at each
# start), which tells the proxy the request is yours.
# An alias named claude would shadow (bash) or break (zsh) the function, so it goes. One that runs claude with
# arguments (alias claude='claude --verbose'), or runs a claude by its path (Claude Code's local install:
# alias claude="~/.claude/local/claude"), is kept: the function runs that, with those arguments first.
# Each line that may fail ends in `|| :`: an rc file sourced under `set -e` (a script's `set -e; . ~/.bashrc`)
# ended the shell at the first, where no alias is defined.
__bead_alias=$(alias claude 2>/dev/null) || __bead_alias=""
unalias claude 2>/dev/null || :
# Kept from an earlier source of this file in this shell (its alias is gone by then), never from the environment: an
# exported value is someone else's, and the function evals it.
case "$(export -p 2>/dev/null)" in *__bead_claude_*) unset __bead_claude_cmd __bead_claude_args ;; esac
__bead_claude_cmd=${__bead_claude_cmd-claude}
__bead_claude_args=${__bead_claude_args-}
if [ -n "$__bead_alias" ]; then
  __bead_def=${__bead_alias#alias }
  __bead_def=${__bead_def#claude=}
  eval "__bead_def=$__bead_def"
  __bead_first=${__bead_def%% *}
  __bead_rest=""
  case "$__bead_def" in *" "*) __bead_rest=${__bead_def#* } ;; esac
  case "$__bead_first" in
    claude) __bead_claude_cmd=claude; __bead_claude_args=$__bead_rest ;;
    */claude) __bead_claude_cmd=$__bead_first; __bead_claude_args=$__bead_rest ;;
    *) echo "bead: your alias claude='$__bead_def' is replaced by bead's claude function" >&2 ;;
  esac
fi
unset __bead_alias __bead_def __bead_first __bead_rest
# Never exported (a shell under `set -a` exports what it sets): the check above would take the next source's for
# someone else's.
if [ -n "${ZSH_VERSION-}" ]; then typeset -g +x __bead_claude_cmd __bead_claude_args; else export -n __bead_claude_cmd __bead_claude_args 2>/dev/null || :; fi
function __bead_claude {
  # The base URL goes inside the eval: set before a function call, zsh's POSIX_BUILTINS would keep it.
  eval "$1 command $__bead_claude_cmd $__bead_claude_args \"\${@:2}\""
}
function claude {
  # The check (`bead check-proxy`, run here by bead's own Python on the standard library alone) answers yes only
  # when the proxy proves it holds this home's token and, on Linux, the kernel says you own the listening socket:
  # another user's program on the port gets nothing, not the token, your API key or a prompt.
  # Local: a claude ended by Ctrl-C leaves the function before its last line, and a global would keep the token in
  # the shell (and, under `set -a`, in the environment of every command after it).
  local __bead_url
  if [ -x @PYTHON@ ] && @PYTHON@ -E -P -m bead.ports @LISTEN_ARG@ @TOKEN@ >/dev/null 2>&1; then
    __bead_url="http://@LISTEN@/$(cat @TOKEN@ 2>/dev/null)"
    __bead_claude 'ANTHROPIC_BASE_URL=$__bead_url CLAUDE_CODE_GATEWAY_HINT_HEADERS=1' "$@"
    unset __bead_url
  else
    echo "bead: the proxy is not answering at @LISTEN@ (or cannot prove it is this home's); running claude without memory (see: bead status)" >&2
    __bead_claude '' "$@"
  fi
}
