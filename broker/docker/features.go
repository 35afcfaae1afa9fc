package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// listFeatures reads a broker's feature flags (`rabbitmqctl
// list_feature_flags name state`) and deprecated features (`rabbitmqctl
// list_deprecated_features`, RabbitMQ 3.13 and later:
// https://www.rabbitmq.com/docs/deprecated-features) through run, which
// execs a command in a node. A version without the second command has no
// DeprecatedFeatures; an error reading the flags is returned. Each command
// costs a CLI start (1–2 s, ~7 s under load).
func listFeatures(ctx context.Context, run func(ctx context.Context, cmd ...string) (string, error)) (*scenario.BrokerFeatures, error) {
	out, err := run(ctx, "rabbitmqctl", "-q", "list_feature_flags", "name", "state", "--formatter", "json")
	if err != nil {
		return nil, fmt.Errorf("list feature flags: %w", err)
	}
	var flags []struct{ Name, State string }
	if err := json.Unmarshal([]byte(out), &flags); err != nil {
		return nil, fmt.Errorf("list feature flags: %w (output %.200q)", err, out)
	}
	f := &scenario.BrokerFeatures{FeatureFlags: map[string]string{}}
	for _, fl := range flags {
		f.FeatureFlags[fl.Name] = fl.State
	}
	out, err = run(ctx, "rabbitmqctl", "-q", "list_deprecated_features", "--formatter", "json")
	if err != nil {
		if strings.Contains(err.Error(), " exited 64") { // EX_USAGE: an unknown command
			return f, nil // a version before 3.13: no such command
		}
		return f, fmt.Errorf("list deprecated features: %w", err)
	}
	var dep []struct {
		Name  string `json:"name"`
		Phase string `json:"deprecation_phase"`
	}
	if err := json.Unmarshal([]byte(out), &dep); err != nil {
		return f, fmt.Errorf("list deprecated features: %w (output %.200q)", err, out)
	}
	f.DeprecatedFeatures = map[string]string{}
	for _, d := range dep {
		f.DeprecatedFeatures[d.Name] = d.Phase
	}
	return f, nil
}

// Features lists the broker's feature flags and deprecated features
// (listFeatures).
func (c *Container) Features(ctx context.Context) (*scenario.BrokerFeatures, error) {
	return listFeatures(ctx, c.Exec)
}

// Features lists the cluster's feature flags and deprecated features
// through the best node to ask (listFeatures).
func (c *Cluster) Features(ctx context.Context) (*scenario.BrokerFeatures, error) {
	return listFeatures(ctx, c.ask)
}
