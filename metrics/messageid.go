package metrics

import "strconv"

// AppendMessageID appends MessageID(seq) to b: a publisher building its
// messages in a reused buffer allocates no string per message.
func (l *Ledger) AppendMessageID(b []byte, seq int) []byte {
	return strconv.AppendInt(append(b, l.prefix...), int64(seq), 10)
}
