package verdict

import (
	"errors"
	"slices"
	"strings"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// Split merges the evidence of one burst of a run split across processes
// (`rmqtorture check` over the folders of run --load-only --part K/N and
// run --drain-only): the load parts' histories in turn, then the drain's,
// each replayed into the one ledger the burst is then concluded on. A load
// part observes the publishing side, the drain the queue's; a property a
// part cannot observe (false acks, assertions: the parts run no fault) is
// not merged.
type Split struct {
	ev       Evidence
	partErrs []string // the load parts' publisher errors, each named by its part
	gaps     []string // the load parts whose history is missing, and their ids
}

// AddLoadPart adds the evidence of the load part named name: the mode and
// expectations are the histories' (one scenario), times blocked and
// channel closes add up, a loss allowed or an interruption in any part
// holds for the run, and its publisher's error is kept under its name.
func (s *Split) AddLoadPart(name string, ev Evidence) {
	s.ev.Header = ev.Header
	s.ev.BlockedMS += ev.BlockedMS
	s.ev.ChannelCloses = append(s.ev.ChannelCloses, ev.ChannelCloses...)
	s.ev.LostAllowed = s.ev.LostAllowed || ev.LostAllowed
	s.ev.Interrupted = s.ev.Interrupted || ev.Interrupted
	if e := ev.PublishErr.Err; e != nil {
		s.partErrs = append(s.partErrs, name+": "+e.Error())
	}
}

// AddDrain adds the drain's evidence: whether it completed, and what the
// queue's dead-letter path allowed and did.
func (s *Split) AddDrain(ev Evidence) {
	s.ev.Header = ev.Header
	s.ev.Drained = ev.Drained
	s.ev.DeadLetterLossAllowed, s.ev.DeadLetterGuarantee, s.ev.DeadLetterReasons = ev.DeadLetterLossAllowed, ev.DeadLetterGuarantee, ev.DeadLetterReasons
	s.ev.DrainIncomplete = ev.DrainIncomplete
}

// NoDrain says why no drain's history of the burst is merged: no delivery
// is known, so the verdict is inconclusive.
func (s *Split) NoDrain(why error) {
	s.ev.DrainIncomplete = scenario.Failure{Err: why}
}

// Unaccounted sets aside ids of a load part whose history is missing:
// never seen published, so neither sent nor lost; gap says which, and
// makes the verdict inconclusive.
func (s *Split) Unaccounted(ids int, gap string) {
	s.ev.Unaccounted += ids
	s.gaps = append(s.gaps, gap)
}

// Conclude concludes the merged burst on ledger into res (see Conclude):
// the missing parts and the parts' publisher errors, in that order, are
// its publisher error.
func (s *Split) Conclude(res *scenario.ModeResult, ledger *metrics.Ledger) {
	if why := slices.Concat(s.gaps, s.partErrs); len(why) > 0 {
		s.ev.PublishErr = scenario.Failure{Err: errors.New(strings.Join(why, "; "))}
	}
	Conclude(res, ledger, &s.ev, nil)
}
