package cmd

import (
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// maintenance against a real broker: the drained node closes the
// publisher's connection and takes no new one until revive; nothing
// confirmed is lost and the container is never restarted
// (checkToolActionMidBurst).
func TestMaintenanceMidBurst(t *testing.T) {
	checkToolActionMidBurst(t, scenario.Maintenance)
}
