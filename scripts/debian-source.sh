# Fetch a Debian source package without writing any host apt file (sourced, not run).
#
#   debian_source_fetch APTDIR DLDIR PACKAGE VERSION...
#
# Derives deb-src entries from the machine's own apt sources into the private
# directory APTDIR (debian_source_lists, with the suites DEBIAN_SOURCE_SUITES
# when that is set), updates those lists once (APTDIR/updated marks it), and
# downloads into DLDIR the source of the first VERSION whose .dsc arrives, or,
# when none of them can be had (the archive may serve a security update's
# binaries but not its source), of the newest version the lists offer.
# Prints the version fetched; returns 1 when no source can be fetched.
# A version already in DLDIR is not downloaded again. apt checks the signed
# Sources and the dsc's checksums as it always does.
#
#   debian_source_lists APTDIR [SUITES]
#
# Writes APTDIR/sources.list and APTDIR/sources.list.d/deb-src.sources: the
# machine's apt sources (deb822 files and one-line lists) as deb-src entries,
# same URIs, components and keys; with SUITES (e.g. "forky sid": the same
# archive's newer suites) in place of each entry's own, leaving out the
# entries of security suites, which hold no other suite.

debian_source_lists() {
  local apt=$1 suites=${2:-} f
  mkdir -p "$apt/sources.list.d"
  # deb822 files, a paragraph per entry
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk -v suites="$suites" 'BEGIN { RS = ""; ORS = "\n\n" }
      {
        $0 = "\n" $0
        if (suites != "") {
          if ($0 ~ /\nSuites:[^\n]*-security/) next
          sub(/\nSuites:[^\n]*/, "\nSuites: " suites)
        }
        sub(/\nTypes:[^\n]*/, "\nTypes: deb-src")
        print substr($0, 2)
      }' "$f"
  done > "$apt/sources.list.d/deb-src.sources"
  # one-line files: deb [options] URI suite components...
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    awk -v suites="$suites" '
      $1 == "deb" {
        i = 2
        if ($2 ~ /^\[/) while ($i !~ /\]$/) i++
        if (suites != "" && $(i + 2) ~ /-security$/) next
        n = split(suites == "" ? $(i + 2) : suites, s, " ")
        for (k = 1; k <= n; k++) {
          line = "deb-src"
          for (j = 2; j <= NF; j++) line = line " " (j == i + 2 ? s[k] : $j)
          print line
        }
      }' "$f"
  done > "$apt/sources.list"
}

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
    debian_source_lists "$apt" "${DEBIAN_SOURCE_SUITES:-}"
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
