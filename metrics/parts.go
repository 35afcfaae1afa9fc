package metrics

import (
	"fmt"
	"strconv"
	"strings"
)

// A run split across processes (run --load-only --part K/N, run
// --drain-only): each load part publishes a disjoint, contiguous range of
// every burst's sequence numbers into the same queue, under message ids that
// share one run id, and records its history; the drain part records the
// deliveries. `rmqtorture check` replays every part's history into one
// ledger (ReplayHistoryInto) and judges it once.

// MaxParts bounds N in --part K/N and --parts N: more processes than this
// share one burst only in a mistake (each would publish a handful of ids).
const MaxParts = 1000

// Part says which share of a split run a history or result holds. Index
// is K of K/N (1-based) for a load part and 0 for the drain.
type Part struct {
	RunID string `json:"run_id"`
	Index int    `json:"part,omitempty"`
	Parts int    `json:"parts"`
	Drain bool   `json:"drain,omitempty"`
	// First and End bound the sequence numbers a load part publishes in
	// every burst: [First, End). Absent for the drain.
	First int `json:"first_seq,omitempty"`
	End   int `json:"end_seq,omitempty"`
}

// String is "part 2/4" or "drain".
func (p Part) String() string {
	if p.Drain {
		return "drain"
	}
	return fmt.Sprintf("part %d/%d", p.Index, p.Parts)
}

// PartRange is load part k of n's share of a burst of messages sequence
// numbers: [first, end) with first = (k-1)·messages/n and end =
// k·messages/n (integer division), so the n ranges are contiguous,
// disjoint, cover 0..messages-1 and differ in size by at most one. It
// needs 1 ≤ k ≤ n.
func PartRange(messages, k, n int) (first, end int) {
	return (k - 1) * messages / n, k * messages / n
}

// ParsePart reads "K/N" (1 ≤ K ≤ N ≤ MaxParts). Its errors say what is
// wrong without the flag's name.
func ParsePart(s string) (k, n int, err error) {
	ks, ns, ok := strings.Cut(s, "/")
	k, kerr := strconv.Atoi(ks)
	n, nerr := strconv.Atoi(ns)
	switch {
	case !ok || kerr != nil || nerr != nil:
		return 0, 0, fmt.Errorf("%q is not K/N, the part K of N parts (e.g. 2/4)", s)
	case n < 1 || n > MaxParts:
		return 0, 0, fmt.Errorf("%q: N must be within 1–%d, got %d", s, MaxParts, n)
	case k < 1 || k > n:
		return 0, 0, fmt.Errorf("%q: K must be within 1–%d (N), got %d", s, n, k)
	}
	return k, n, nil
}
