package metrics

// A queue the scenario deletes (delete-queue) takes every message in it
// along, and the queue declared again under the same name starts empty. A
// copy of a message published before the delete that is delivered from the
// new queue came back from the old one: a quorum queue member on a node
// that was down during the delete can rejoin the new queue's group and
// replay its old log (rabbitmq-server#12366). The ledger tells those
// deliveries apart by publish attempts: it remembers, at the delete, how
// many attempts of each id were made by then, and an id delivered with no
// attempt made after the delete is resurrected.

// QueueDeleted records that the queue under test was deleted now (its
// queue.delete-ok came back): every attempt made so far and already
// confirmed, nacked, returned or given up (in doubt: its channel is gone)
// was in the queue, or never reached it, when it was deleted. An attempt
// still awaiting its confirm is not counted: the broker may route it after
// the delete, to the queue declared again. A later QueueDeleted replaces
// the earlier record: an id with no attempt after the last delete was
// published before every delete. Costs 2 bytes per id from the first call.
func (l *Ledger) QueueDeleted() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hist.w != nil {
		l.hist.w.Write(HistoryRecord{Kind: HQueueDeleted})
	}
	if l.atDelete == nil {
		l.atDelete = make([]uint16, len(l.attempts))
	}
	for seq, a := range l.attempts {
		pending := l.copies[seq]
		if l.outcome[seq] == InFlight {
			pending++
		}
		l.atDelete[seq] = a - uint16(min(int(a), pending))
	}
}

// resurrected reports whether sent id seq, delivered d times, came back
// from a deleted queue: delivered, published before the last delete, and
// not published since. Deliveries all come from the drain after the burst
// (validation refuses live consumers with delete-queue), so every one of
// them is from the queue declared again. The caller holds l.mu.
func (l *Ledger) resurrected(seq, d int) bool {
	if l.atDelete == nil || d == 0 {
		return false
	}
	before := l.atDelete[seq]
	return before > 0 && before == l.attempts[seq]
}
