package scenario

import "testing"

// maintenance is played with rabbitmq-upgrade drain then revive,
// recovered in place (checkToolStep).
func TestMaintenanceStep(t *testing.T) {
	checkToolStep(t, Maintenance, "rabbitmq-upgrade -q drain", "rabbitmq-upgrade -q revive")
}
