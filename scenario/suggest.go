package scenario

import (
	"strings"

	"github.com/agnivade/levenshtein"
)

// Suggest returns the one of names that got most likely mistypes, or ""
// when none is close: the nearest by edit distance (Levenshtein: a
// swapped pair of letters counts 2), if at most 2 edits and at most half
// of got's length; otherwise the only name that starts with got
// (3 characters or more). Case is ignored: a name that differs only in
// case is the answer. It is cobra's rule for
// mistyped commands (SuggestionsMinimumDistance 2, or a prefix), narrowed
// to a single answer so the error can ask "did you mean X?".
func Suggest(got string, names []string) string {
	g := strings.ToLower(got)
	best, bestD := "", 3
	var prefixed []string
	for _, n := range names {
		l := strings.ToLower(n)
		if l == g {
			return n // the same name in other case
		}
		if d := levenshtein.ComputeDistance(g, l); d < bestD && d <= len(g)/2 {
			best, bestD = n, d
		}
		if len(g) >= 3 && strings.HasPrefix(l, g) {
			prefixed = append(prefixed, n)
		}
	}
	if best == "" && len(prefixed) == 1 {
		best = prefixed[0]
	}
	return best
}

// DidYouMean is "; did you mean X?" for the name Suggest finds, or "".
func DidYouMean(got string, names []string) string {
	if s := Suggest(got, names); s != "" {
		return "; did you mean " + s + "?"
	}
	return ""
}
