package metrics

// Compact per-id state: a plain run keeps outcome (1 byte), flags (1),
// attempts (2) and deliveries (4) per id, 8 bytes; the rest is allocated
// only when first needed (see Ledger.seenLater, retried, parked,
// deadLettered).

// seenAttempt reports whether a copy from publish attempt a (1–64) of seq
// was delivered; the caller holds l.mu.
func (l *Ledger) seenAttempt(seq, a int) bool {
	if a == 1 {
		return l.flags[seq]&flagSeen1 != 0
	}
	return l.seenLater[seq]&(uint64(1)<<(a-1)) != 0
}

// markSeen records that a copy from publish attempt a (1–64) of seq was
// delivered; the caller holds l.mu.
func (l *Ledger) markSeen(seq, a int) {
	if a == 1 {
		l.flags[seq] |= flagSeen1
		return
	}
	if l.seenLater == nil {
		l.seenLater = map[int]uint64{}
	}
	l.seenLater[seq] |= uint64(1) << (a - 1)
}

// count adds one to (*counts)[seq], allocating one uint32 per id on first
// use; the caller holds l.mu.
func (l *Ledger) count(counts *[]uint32, seq int) {
	if *counts == nil {
		*counts = make([]uint32, len(l.outcome))
	}
	(*counts)[seq]++
}

// countOf is counts[seq], 0 while counts is unallocated.
func countOf(counts []uint32, seq int) uint32 {
	if counts == nil {
		return 0
	}
	return counts[seq]
}

// deadLetteredOf is the number of deliveries of seq from the dead-letter
// queue; the caller holds l.mu.
func (l *Ledger) deadLetteredOf(seq int) uint32 { return countOf(l.deadLettered, seq) }

// BytesPerID is the ledger's per-id state in bytes per id: the capacity of
// every per-id slice times its element size, over the number of ids, plus
// 8+8 bytes per entry of the sparse seenLater and copies maps (key and
// value, not counting the maps' own overhead). A plain run (no republish,
// dead-lettering, deleted queue or publish times) is 8 bytes per id.
func (l *Ledger) BytesPerID() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.outcome)
	if n == 0 {
		return 0
	}
	b := cap(l.outcome) + cap(l.flags) + 2*cap(l.attempts) + 4*cap(l.deliveries) +
		4*(cap(l.retried)+cap(l.parked)+cap(l.deadLettered)) + 8*cap(l.pubUS) + 2*cap(l.atDelete) +
		16*(len(l.seenLater)+len(l.copies))
	return float64(b) / float64(n)
}
