# Which sanitizer reports in a libFuzzer log come from our code (used by
# scripts/fuzz.sh for the HDF5 targets, whose children may crash inside
# HDF5 by design). For each report it prints one line: "ours FRAME" when the
# first frame that is not one of the sanitizer's interceptors (memcpy,
# malloc, operator new, ...) lies in our code (the target binary or a
# source file), "library FRAME" when it lies in a shared library of the
# system. The interceptors live in the target binary, so the report's own
# SUMMARY line cannot tell: HDF5's overflow inside memcpy names the target.
# A UBSan "runtime error" names its source line: ours when that is not a
# system header or library.
/ERROR: (AddressSanitizer|LeakSanitizer|MemorySanitizer)/ { in_report = 1; next }
/: runtime error: / {
  if ($0 ~ /^\/usr\/(include|lib)\//) print "library " $0; else print "ours " $0
  next
}
in_report && /^ *#[0-9]+ 0x[0-9a-f]+ in / {
  name = $4
  if (name ~ /^(__interceptor_|___interceptor_|__asan_|__sanitizer_)/ ||
      name ~ /^(memcpy|memmove|memset|memcmp|bcmp|strlen|strnlen|strcmp|strncmp|strcpy|strncpy|strdup|malloc|calloc|realloc|free|posix_memalign|aligned_alloc|operator)$/) next
  in_report = 0
  if ($0 ~ /\((\/lib|\/usr\/lib)[^)]*\)/) print "library " $0; else print "ours " $0
}
