package scenario

import "testing"

func TestSuggest(t *testing.T) {
	names := []string{"kill-mid-burst", "kill-mid-burst-tx", "kill-classic", "baseline", "s"}
	for _, c := range []struct{ got, want string }{
		{"kill-mid-bust", "kill-mid-burst"},  // one letter dropped
		{"kill-mid-brust", "kill-mid-burst"}, // two letters swapped: 2 edits
		{"Kill-Mid-Burst", "kill-mid-burst"}, // the same name in other case
		{"baseln", "baseline"},               // 2 edits in 6 letters
		{"basel", "baseline"},                // 3 edits, but the start of only one name
		{"kill", ""},                         // the start of four names: no single answer
		{"kill-classci", "kill-classic"},     // swapped
		{"nope", ""},                         // far from everything
		{"x", ""},                            // 1 edit from "s", but half of 1 letter is 0
		{"classic-vs-quorum", ""},            // not in names
		{"kill-mid-burst-xt", "kill-mid-burst-tx"},
		{"ab", ""}, // 2 edits from "s", more than half of 2 letters
		{"baselien", "baseline"},
	} {
		if got := Suggest(c.got, names); got != c.want {
			t.Errorf("Suggest(%q) = %q, want %q", c.got, got, c.want)
		}
	}
	if got, want := DidYouMean("confirm-eahc", []string{"confirm-each", "confirm-window"}), "; did you mean confirm-each?"; got != want {
		t.Errorf("DidYouMean = %q, want %q", got, want)
	}
	if got := DidYouMean("lazy", []string{"quorum", "classic", "stream"}); got != "" {
		t.Errorf("DidYouMean(lazy) = %q, want none", got)
	}
}
