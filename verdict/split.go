package verdict

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// Split merges one burst of a run split across processes (`rmqtorture
// check` over the folders of run --load-only --part K/N and run
// --drain-only): the load parts' histories in turn, then the drain's, are
// replayed into one ledger (each with its own confirm tracker: epochs and
// delivery tags are a process's own), and the burst is concluded on it
// with the merged evidence. A load part observes the publishing side, the
// drain the queue's; a property a part cannot observe (false acks,
// assertions: the parts run no fault) is not merged.
//
// A load part whose history is missing leaves its ids unaccounted: the
// verdict is inconclusive and names them, never a loss (those ids were
// never seen published), and the drain's deliveries of them are set
// aside, not unexpected.
type Split struct {
	parts    int // N, the run's number of load parts
	ledger   *metrics.Ledger
	ev       Evidence
	missing  []int    // the load parts (K) without a history of the burst
	skipped  int      // the drain's deliveries of the missing parts' ids
	partErrs []string // the load parts' publisher errors, each named by its part
}

// NewSplit starts the merge of one burst of a split run of parts load
// parts.
func NewSplit(parts int) *Split {
	return &Split{parts: parts}
}

// LoadPart replays load part p's history of the burst, read from r, into
// the merged ledger and adds its evidence: the mode and expectations are
// the histories' (one scenario), times blocked and channel closes add up,
// a loss allowed or an interruption in any part holds for the run, and
// its publisher's error is kept under its name. messages and mode are
// what the part's result.json gives for the burst. It returns the
// history's inconsistencies; errors say what in the history disagrees
// with them, or that it cannot be read.
func (s *Split) LoadPart(r io.Reader, messages int, p metrics.Part, mode scenario.Mode) ([]string, error) {
	_, ev, incons, err := s.replay(r, messages, p, mode, nil)
	if err != nil {
		return nil, err
	}
	s.ev.Header = ev.Header
	s.ev.BlockedMS += ev.BlockedMS
	s.ev.ChannelCloses = append(s.ev.ChannelCloses, ev.ChannelCloses...)
	s.ev.LostAllowed = s.ev.LostAllowed || ev.LostAllowed
	s.ev.Interrupted = s.ev.Interrupted || ev.Interrupted
	if e := ev.PublishErr.Err; e != nil {
		s.partErrs = append(s.partErrs, p.String()+": "+e.Error())
	}
	return incons, nil
}

// MissingPart records that load part k has no history of the burst. Call
// it before Drain, which sets aside the deliveries of its ids.
func (s *Split) MissingPart(k int) {
	s.missing = append(s.missing, k)
}

// Drain replays the drain's history of the burst (as LoadPart) and adds
// its evidence: whether it completed, and what the queue's dead-letter
// path allowed and did.
func (s *Split) Drain(r io.Reader, messages int, p metrics.Part, mode scenario.Mode) ([]string, error) {
	skip := func(seq int) bool {
		return slices.ContainsFunc(s.missing, func(k int) bool {
			first, end := metrics.PartRange(messages, k, s.parts)
			return seq >= first && seq < end
		})
	}
	rp, ev, incons, err := s.replay(r, messages, p, mode, skip)
	if err != nil {
		return nil, err
	}
	s.skipped = rp.Skipped
	s.ev.Header = ev.Header
	s.ev.Drained = ev.Drained
	s.ev.DeadLetterLossAllowed, s.ev.DeadLetterGuarantee, s.ev.DeadLetterReasons = ev.DeadLetterLossAllowed, ev.DeadLetterGuarantee, ev.DeadLetterReasons
	s.ev.DrainIncomplete = ev.DrainIncomplete
	return incons, nil
}

// replay replays one history into the merged ledger (the first one sizes
// it) and returns the replay and the evidence it recorded.
func (s *Split) replay(r io.Reader, messages int, p metrics.Part, mode scenario.Mode, skip func(int) bool) (*metrics.Replay, Evidence, []string, error) {
	hr, err := readHistory(r, messages, &p)
	if err != nil {
		return nil, Evidence{}, nil, err
	}
	rp, err := metrics.ReplayHistoryInto(hr, s.ledger, skip)
	if err != nil {
		return nil, Evidence{}, nil, err
	}
	s.ledger = rp.Ledger
	ev, err := FromReplay(rp)
	if err != nil {
		return nil, Evidence{}, nil, err
	}
	if ev.Mode != mode {
		return nil, Evidence{}, nil, fmt.Errorf("the history records mode %q, result.json names %q for it", ev.Mode, mode)
	}
	return rp, ev, rp.Inconsistencies, nil
}

// NoDrain says why no drain's history of the burst is merged: no delivery
// is known, so the verdict is inconclusive.
func (s *Split) NoDrain(why error) {
	s.ev.DrainIncomplete = scenario.Failure{Err: why}
}

// ErrNoHistory: neither a load part nor the drain had a history of the
// burst, so there is nothing to conclude on.
var ErrNoHistory = errors.New("no history of it in any folder")

// Conclude concludes the merged burst into res (see Conclude). The
// missing parts' ids are set aside as unaccounted; the missing parts and
// the parts' publisher errors, in that order, are its publisher error.
// Its error is ErrNoHistory when no history was merged.
func (s *Split) Conclude(res *scenario.ModeResult) error {
	if s.ledger == nil {
		return ErrNoHistory
	}
	var gaps []string
	for i, k := range s.missing {
		first, end := metrics.PartRange(s.ledger.Size(), k, s.parts)
		gap := fmt.Sprintf("part %d/%d missing: ids %s–%d not accounted", k, s.parts, s.ledger.MessageID(first), end-1)
		if i == len(s.missing)-1 && s.skipped > 0 {
			gap += fmt.Sprintf(" (the drain's %d deliveries of them set aside)", s.skipped)
		}
		s.ev.Unaccounted += end - first
		gaps = append(gaps, gap)
	}
	if why := slices.Concat(gaps, s.partErrs); len(why) > 0 {
		s.ev.PublishErr = scenario.Failure{Err: errors.New(strings.Join(why, "; "))}
	}
	Conclude(res, s.ledger, &s.ev, nil)
	return nil
}
