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
