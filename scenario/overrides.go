package scenario

import (
	"fmt"
	"strings"
)

// This file holds the changes command-line flags make to a loaded
// scenario that more than one field takes part in. The scenario is checked
// again afterwards (Validate).

// SetConsumers sets consumers.count to n. Live consumers added to a
// scenario that had none get the defaults a file gets (prefetch 100, ack
// every delivery, on_delivery ack); n 0 removes them, with their settings.
func (s *Scenario) SetConsumers(n int) {
	switch {
	case n == 0:
		s.Consumers = Consumers{}
	case s.Consumers.Count <= 0:
		s.Consumers = Consumers{Count: n}
		// No key is set: every default applies, as for a file that
		// says only consumers: {count: n}.
		defaulter{p: newParser("")}.consumers(s)
	default:
		s.Consumers.Count = n
	}
}

// SetTrigger makes fault i fire at a share of the burst (percent, 0–100)
// or at a publish count, replacing its own trigger.
func (s *Scenario) SetTrigger(i int, percent *float64, count *int) {
	f := &s.Faults[i]
	f.PublishedPercent, f.Published, f.After, f.InFlight, f.AfterBurst, f.AfterStart = percent, count, nil, nil, nil, nil
}

// SetDown sets the down time of every step that takes the broker (or
// nodes) down, cut off or alarmed for a while and brings it back itself:
// not client-side steps (crash-consumer), delete-queue (the broker stays
// up) nor steps a later step recovers (manual_recovery). It returns how
// many steps it set.
func (s *Scenario) SetDown(d Duration) int {
	n := 0
	for i := range s.Faults {
		f := &s.Faults[i]
		if actionTable[f.Action].BrokerDown && !f.ManualRecovery {
			f.Down = d
			n++
		}
	}
	return n
}

// FaultSummary describes the fault steps in a few words each, for
// messages ("kill at 50% published, down 5s; pause after 2s").
func (s *Scenario) FaultSummary() string {
	parts := make([]string, len(s.Faults))
	for i, f := range s.Faults {
		parts[i] = fmt.Sprintf("%s at %s", f.Action, f.Trigger())
		if f.Action.Takes(ParamDown) && !f.ManualRecovery && f.Down > 0 {
			parts[i] += fmt.Sprintf(", down %s", f.Down.D())
		}
	}
	return strings.Join(parts, "; ")
}
