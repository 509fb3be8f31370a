#!/usr/bin/env bash
# Prints the client matrix, clients × scenarios, from every matrix-<suite>.tsv the client suites
# wrote (rows: client<TAB>scenario<TAB>pass|fail|n/a<TAB>note), and writes it as Markdown to
# DIR/matrix.md.
#
#   compat-tests/matrix.sh [DIR]        # DIR defaults to <repo>/target/test-logs
#
# Columns are the seven scenarios in their fixed order, then any other scenario a suite wrote
# (a client's own, e.g. Kafka Connect's connect-standalone). A client with no row for one of the
# seven reads "todo", and "-" for another client's own scenario; a scenario with several rows for
# one client reads fail if any of them failed. The notes of n/a and fail cells follow the table,
# one line for the scenarios of a client that share a note.
set -u
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-$root/target/test-logs}"
shopt -s nullglob
files=("$dir"/matrix-*.tsv)
mkdir -p "$dir"
out="$dir/matrix.md"
if [ ${#files[@]} -eq 0 ]; then
    echo "(no client matrix: no $dir/matrix-*.tsv)" | tee "$out"
    exit 0
fi
awk -F'\t' '
BEGIN {
    split("produce-consume-codecs idempotent group-of-three transactions admin sasl-tls leader-kill", fixed, " ")
    for (i = 1; i in fixed; i++) { ncol++; col[ncol] = fixed[i]; known[fixed[i]] = 1; fixedcol[fixed[i]] = 1 }
}
NF < 3 { next }
{
    c = $1; s = $2; r = $3
    if (!(c in seen)) { seen[c] = 1; nrow++; row[nrow] = c }
    if (!(s in known)) { known[s] = 1; ncol++; col[ncol] = s }
    k = c SUBSEP s
    if (!(k in cell) || r == "fail") cell[k] = r
    if ((r == "fail" || r == "n/a") && $4 != "") note[k] = $4
}
END {
    line = "| client |"; sep = "|---|"
    for (j = 1; j <= ncol; j++) { line = line " " col[j] " |"; sep = sep "---|" }
    print line; print sep
    for (i = 1; i <= nrow; i++) {
        line = "| " row[i] " |"
        for (j = 1; j <= ncol; j++) {
            k = row[i] SUBSEP col[j]
            line = line " " ((k in cell) ? cell[k] : ((col[j] in fixedcol) ? "todo" : "-")) " |"
        }
        print line
    }
    # One line per client, result and note, naming every scenario that shares it.
    nn = 0
    for (i = 1; i <= nrow; i++) for (j = 1; j <= ncol; j++) {
        k = row[i] SUBSEP col[j]
        if (!(k in note)) continue
        g = row[i] SUBSEP cell[k] SUBSEP note[k]
        if (!(g in names)) { nn++; order[nn] = g; who[nn] = row[i]; res[nn] = cell[k]; text[nn] = note[k]; names[g] = col[j] }
        else names[g] = names[g] ", " col[j]
    }
    if (nn) print ""
    for (n = 1; n <= nn; n++) print "- " who[n] ", " names[order[n]] " (" res[n] "): " text[n]
}' "${files[@]}" | tee "$out"
