package engine

import (
	"strconv"
	"sync"
)

// deadLetterDeaths keeps, per id taken from the dead-letter queue, the
// reason and count of its latest x-death entry (a redelivered copy
// replaces the first), so the result counts ids, not deliveries. A nil
// *deadLetterDeaths records nothing.
type deadLetterDeaths struct {
	mu  sync.Mutex
	ids map[string]death
}

type death struct {
	reason string
	count  int
}

// add records id's latest x-death reason and count (OnDeadLetter).
func (d *deadLetterDeaths) add(id, reason string, count int) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ids == nil {
		d.ids = map[string]death{}
	}
	d.ids[id] = death{reason, count}
}

// result is reason → ids and x-death count → ids (nil, nil when nothing
// was dead-lettered), for ModeResult.DeadLetterReasons and XDeathCounts.
func (d *deadLetterDeaths) result() (reasons, counts map[string]int) {
	if d == nil || len(d.ids) == 0 {
		return nil, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	reasons, counts = map[string]int{}, map[string]int{}
	for _, x := range d.ids {
		reasons[x.reason]++
		counts[strconv.Itoa(x.count)]++
	}
	return reasons, counts
}
