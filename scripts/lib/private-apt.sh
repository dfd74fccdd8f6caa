# Sourced by the scripts that fetch test inputs from Debian (fetch-cuda-samples,
# fetch-rocblas-samples): apt with a configuration of its own, so that the
# machine's apt setup is not changed. Nothing under /etc/apt, /var/lib/apt or
# /var/cache/apt is read for sources or written: its sources list, lists,
# cache and an empty dpkg status live under the folder given; only the
# machine's apt.conf.d is read (a proxy configured there applies). As root,
# apt's _apt sandbox user cannot write to a folder of ours: it runs as the
# caller (the files are checked against the signed index either way).
# Debian's mirrors may serve suites whose Release files are past their
# validity date (sid, trixie): not an error here.
#
#   private_apt_download <apt dir> <into dir> <deb822 sources text> <package=version>...
#
# downloads the .debs into <into dir> (after a private 'apt-get update').
private_apt_download() {
  local apt_dir=$1 into=$2 sources=$3
  shift 3
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  printf '%s\n' "$sources" >"$apt_dir/debian.sources"
  : >"$apt_dir/status"
  local apt_private=(
    -o Dir::Etc::SourceList="$apt_dir/debian.sources" -o Dir::Etc::SourceParts=/nonexistent
    -o Dir::State="$apt_dir" -o Dir::State::Lists="$apt_dir/lists" -o Dir::State::status="$apt_dir/status"
    -o Dir::Cache="$apt_dir/cache" -o APT::Sandbox::User="$(id -un)" -o Acquire::Check-Valid-Until=false
  )
  apt-get -qq "${apt_private[@]}" update >/dev/null || { echo "the private apt-get update failed (network? $apt_dir)" >&2; return 1; }
  (cd "$into" && apt-get download -qq "${apt_private[@]}" "$@" >/dev/null) \
    || { echo "apt-get download $* failed (are these versions still in Debian?)" >&2; return 1; }
}

# A cache of pinned .debs, each unpacked (the fetch scripts' common part):
#
#   pinned_debs_cache <cache dir> <script name> <deb822 sources text> <package=version>...
#
# takes the cache's lock for the rest of the calling script (two test runs
# sharing a cache would unpack into the same folders), removes what an
# interrupted run left, downloads the .debs that are not there as readable
# .debs (<cache>/<package>_<version>_amd64.deb; the private 'apt-get update'
# runs only then), and unpacks each into <cache>/unpacked/<package>/ with a
# stamp (.from) naming the .deb, kept while the stamp names it. A function
# `unpack_deb_into <package> <deb> <dir>`, when the caller defines one and it
# returns 0, unpacks that package instead of dpkg-deb -x (part of a .deb).
pinned_debs_cache() {
  local cache=$1 name=$2 sources=$3
  shift 3
  mkdir -p "$cache"
  exec 9>"$cache/.lock"
  flock 9
  rm -rf "$cache"/.download.* "$cache"/unpacked/*.tmp
  local spec pkg version deb dir tmp missing=()
  _deb_of() { pkg=${1%%=*} version=${1#*=}; deb="$cache/${pkg}_${version#*:}_amd64.deb"; }
  _readable() { [ -f "$1" ] && dpkg-deb --info "$1" >/dev/null 2>&1; }
  for spec in "$@"; do
    _deb_of "$spec"
    _readable "$deb" || missing+=("$spec")
  done
  if [ "${#missing[@]}" != 0 ]; then
    tmp=$(mktemp -d "$cache/.download.XXXXXX")
    if ! private_apt_download "$cache/apt" "$tmp" "$sources" "${missing[@]}"; then
      rm -rf "$tmp"
      echo "$name: could not download ${missing[*]}" >&2
      return 1
    fi
    for spec in "${missing[@]}"; do
      _deb_of "$spec"
      local got=("$tmp/${pkg}_"*.deb)
      if [ "${#got[@]}" != 1 ] || ! _readable "${got[0]}"; then
        rm -rf "$tmp"
        echo "$name: $spec: no readable .deb downloaded" >&2
        return 1
      fi
      mv "${got[0]}" "$deb"
      echo "fetched $(basename "$deb") ($(du -h "$deb" | cut -f1))" >&2
    done
    rm -rf "$tmp"
  fi
  for spec in "$@"; do
    _deb_of "$spec"
    dir="$cache/unpacked/$pkg"
    [ "$(cat "$dir/.from" 2>/dev/null)" = "$(basename "$deb")" ] && continue
    rm -rf "$dir" "$dir.tmp"
    mkdir -p "$dir.tmp"
    if ! { declare -F unpack_deb_into >/dev/null && unpack_deb_into "$pkg" "$deb" "$dir.tmp"; }; then
      dpkg-deb -x "$deb" "$dir.tmp"
    fi
    basename "$deb" >"$dir.tmp/.from"
    mv "$dir.tmp" "$dir"
    echo "unpacked $(basename "$deb") into $dir" >&2
  done
}
