package docker

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A version before 3.13 has no list_deprecated_features (the CLI exits 64,
// usage): the flags are kept, no deprecated features listed, no error.
// Any other failure of the second call is an error beside the flags.
func TestListFeatures(t *testing.T) {
	flags := `[{"name":"quorum_queue","state":"enabled"},{"name":"khepri_db","state":"disabled"}]`
	run := func(second error, out string) func(context.Context, ...string) (string, error) {
		return func(_ context.Context, cmd ...string) (string, error) {
			if strings.Contains(strings.Join(cmd, " "), "list_feature_flags") {
				return flags, nil
			}
			return out, second
		}
	}
	f, err := listFeatures(context.Background(), run(errors.New(`rabbitmqctl -q list_deprecated_features --formatter json in "rmqt-x" exited 64: Command 'list_deprecated_features' not found`), ""))
	if err != nil || f.FeatureFlags["khepri_db"] != "disabled" || f.DeprecatedFeatures != nil {
		t.Fatalf("3.10: %+v, %v", f, err)
	}
	f, err = listFeatures(context.Background(), run(nil, `[{"name":"transient_nonexcl_queues","deprecation_phase":"permitted_by_default"}]`))
	if err != nil || f.DeprecatedFeatures["transient_nonexcl_queues"] != "permitted_by_default" || len(f.FeatureFlags) != 2 {
		t.Fatalf("4.0: %+v, %v", f, err)
	}
	f, err = listFeatures(context.Background(), run(errors.New("context deadline exceeded"), ""))
	if err == nil || f == nil || f.FeatureFlags["quorum_queue"] != "enabled" {
		t.Fatalf("a failed second call: %+v, %v", f, err)
	}
}
