# Reads a librdkafka test-runner log (ANSI colours stripped) and prints, for each test named in
# -v names="a b c", one line: name TAB state TAB seconds TAB message.
#
# Sources, in order of trust: the summary table printed when the runner gets that far
# ("| NAME | STATE | 1.234s | why"), the failure blocks
# ('### Test "NAME (subtest)" failed at FILE:LINE:FUNC() at DATE: ###' + the message on the next
# line), the "=== Test NAME PASSED|FAILED ===" markers and "SKIPPING TEST: why". A failing test
# usually makes the runner abort before its summary (leaked librdkafka threads), hence the markers.
# A PASSED test in a run whose <MAIN> then failed (e.g. threads left behind) is reported FAILED
# unless another test of the same run failed (which explains the <MAIN> failure).
BEGIN { n = split(names, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1 }
nextmsg != "" { if (!(nextmsg in fmsg)) fmsg[nextmsg] = floc[nextmsg] ": " $0; nextmsg = "" }
nextmain { mainmsg = $0; nextmain = 0 }
match($0, /^\[[^ \/]+ *\/ *[0-9.]+s\]/) {
    h = substr($0, 2, RLENGTH - 3); split(h, hp, "/"); nm = hp[1]; gsub(/ /, "", nm)
    t = hp[2]; gsub(/[ s]/, "", t)
    if (nm in want) {
        last[nm] = t
        k = index($0, "SKIPPING TEST: ")
        if (k) {   # (the runner may glue its next log line onto a reason without newline)
            r = substr($0, k + 15); sub(/\[[^ \/]+ *\/ *[0-9.]+s\].*$/, "", r); sk[nm] = r
        }
    }
}
match($0, /================= Test [^ ]+ (PASSED|FAILED) =/) {
    split(substr($0, RSTART, RLENGTH), w, " "); mark[w[3]] = w[4]
}
/^### Test ".*" failed at .* at .*: ###$/ {
    q = substr($0, 11); q = substr(q, 1, index(q, "\"") - 1); nm = q; sub(/ .*/, "", nm)
    sub(/^[^ ]+ ?/, "", q); gsub(/^\(|\)$/, "", q)
    loc = $0; sub(/^.*" failed at /, "", loc); sub(/\(\) at .*/, "()", loc)
    if (nm in want) {
        fail[nm] = 1
        if (!(nm in floc)) { floc[nm] = (q != "" ? "[" q "] " : "") loc; nextmsg = nm }
    } else if (nm == "<MAIN>" && !mainfail) { mainfail = 1; mainloc = loc; nextmain = 1 }
    next
}
/^\| / {
    split($0, c, "|"); nm = c[2]; gsub(/^ +| +$/, "", nm); st = c[3]; gsub(/ /, "", st)
    if (nm in want && st ~ /^(PASSED|FAILED|SKIPPED|RUNNING|DNS)$/) {
        tab[nm] = st; d = c[4]; gsub(/[ s]/, "", d); dur[nm] = d
        r = c[5]; gsub(/^ +| +$/, "", r); why[nm] = r
    }
}
END {
    anyfail = 0
    for (i = 1; i <= n; i++)
        if ((a[i] in fail) || ((a[i] in tab) && tab[a[i]] == "FAILED") ||
            ((a[i] in mark) && mark[a[i]] == "FAILED")) anyfail = 1   # (no auto-vivifying reads)
    for (i = 1; i <= n; i++) {
        nm = a[i]; st = ""; msg = ""
        if (nm in tab) st = tab[nm]
        else if (nm in fail) st = "FAILED"
        else if (nm in mark) st = mark[nm]
        else if (nm in sk) st = "SKIPPED"
        if (nm in fail) msg = (nm in fmsg) ? fmsg[nm] : floc[nm]
        else if (st == "SKIPPED") msg = (nm in sk) ? sk[nm] : why[nm]
        else if (st == "FAILED" || st == "RUNNING") msg = why[nm]
        if (st == "PASSED" && mainfail && !anyfail) {
            st = "FAILED"; msg = "passed, then the runner failed at " mainloc ": " mainmsg
        }
        d = (nm in dur) ? dur[nm] : ((nm in last) ? last[nm] : "")
        gsub(/\t/, " ", msg)
        printf "%s\t%s\t%s\t%s\n", nm, st, d, msg
    }
}
