package amqp

import amqp "github.com/rabbitmq/amqp091-go"

// latestDeath reads the latest entry of a dead-lettered delivery's x-death
// header (the broker keeps the most recent first): why it was dead-lettered
// (delivery_limit, rejected, expired, maxlen) and that entry's count, the
// times the message was dead-lettered from that queue for that reason. A
// delivery without x-death (a copy an application published itself) gives
// "none" and 0. See https://www.rabbitmq.com/docs/dlx#effects.
func latestDeath(h amqp.Table) (reason string, count int) {
	entries, _ := h["x-death"].([]any)
	if len(entries) > 0 {
		if t, ok := entries[0].(amqp.Table); ok {
			if r, _ := t["reason"].(string); r != "" {
				return r, headerInt(t, "count")
			}
		}
	}
	return "none", 0
}
