# Fetch a Debian source package without writing any host apt file (sourced, not run).
#
#   debian_source_fetch APTDIR DLDIR PACKAGE VERSION...
#
# Derives deb-src entries from the machine's own apt sources (deb822 files and
# one-line lists: same URIs, suites, components and keys) into the private
# directory APTDIR, updates those lists once (APTDIR/updated marks it), and
# downloads into DLDIR the source of the first VERSION whose .dsc arrives, or,
# when none of them can be had (the archive may serve a security update's
# binaries but not its source), of the newest version the lists offer.
# Prints the version fetched; returns 1 when no source can be fetched.
# A version already in DLDIR is not downloaded again.

debian_source_fetch() {
  local apt dl pkg=$3
  apt=$(realpath -m "$1") dl=$(realpath -m "$2")
  shift 3
  local opt=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/sources.list.d"
             -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o "APT::Sandbox::User=root")
  local v
  for v in "$@"; do
    [ -n "$v" ] && [ -f "$dl/${pkg}_${v#*:}.dsc" ] && { echo "$v"; return 0; }
  done
  mkdir -p "$apt/sources.list.d" "$apt/lists/partial" "$apt/cache/archives/partial" "$dl"
  if [ ! -f "$apt/updated" ]; then
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] && sed -E 's/^Types:.*/Types: deb-src/' "$f" && echo
    done > "$apt/sources.list.d/deb-src.sources"
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -f "$f" ] && sed -nE 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f"
    done > "$apt/sources.list"
    apt-get "${opt[@]}" update -qq >&2 && touch "$apt/updated"
  fi
  for v in "$@" $(apt-cache "${opt[@]}" showsrc "$pkg" | sed -n 's/^Version: //p' | sort -rV); do
    [ -n "$v" ] || continue
    if (cd "$dl" && apt-get "${opt[@]}" source --download-only -qq "$pkg=$v" >/dev/null 2>&1) &&
       [ -f "$dl/${pkg}_${v#*:}.dsc" ]; then
      echo "$v"
      return 0
    fi
    echo "the source of $pkg $v cannot be fetched" >&2
  done
  return 1
}
