package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
)

// Where a scenario's broker configuration goes in the container. RabbitMQ
// reads every file in conf.d after rabbitmq.conf, later keys winning, and
// advanced.config for what rabbitmq.conf cannot say
// (https://www.rabbitmq.com/docs/configure#config-file).
const (
	configDir          = "/etc/rabbitmq"
	confFile           = "conf.d/90-rmqtorture.conf"
	advancedConfigFile = "advanced.config"
)

// confText renders rabbitmq.conf keys and values, one "key = value" line
// each, in key order.
func confText(conf map[string]string) []byte {
	var b bytes.Buffer
	b.WriteString("# Written by rmqtorture from the scenario's broker.config.\n")
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		fmt.Fprintf(&b, "%s = %s\n", k, strings.TrimSpace(conf[k]))
	}
	return b.Bytes()
}

// advancedText renders keys of the rabbit application as advanced.config,
// an Erlang term: [{rabbit, [{key, value}, …]}].
func advancedText(env map[string]int) []byte {
	parts := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		parts = append(parts, fmt.Sprintf("{%s, %d}", k, env[k]))
	}
	return fmt.Appendf(nil, "%% Written by rmqtorture from the scenario's broker.advanced_config.\n[{rabbit, [%s]}].\n", strings.Join(parts, ", "))
}

// configArchive is the tar stream CopyToContainer unpacks into configDir:
// conf.d/90-rmqtorture.conf for conf, advanced.config for env (each only
// when set). Files are 0644 root's, readable by the rabbitmq user.
func configArchive(conf map[string]string, env map[string]int) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	add := func(name string, body []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: now, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	if len(conf) > 0 {
		if err := tw.WriteHeader(&tar.Header{Name: "conf.d/", Mode: 0o755, ModTime: now, Typeflag: tar.TypeDir}); err != nil {
			return nil, err
		}
		if err := add(confFile, confText(conf)); err != nil {
			return nil, err
		}
	}
	if len(env) > 0 {
		if err := add(advancedConfigFile, advancedText(env)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeConfig copies the scenario's broker configuration into the created,
// not yet started container: the node reads it at its first boot, and at
// every restart after.
func (c *Container) writeConfig(ctx context.Context, conf map[string]string, env map[string]int) error {
	if len(conf) == 0 && len(env) == 0 {
		return nil
	}
	archive, err := configArchive(conf, env)
	if err != nil {
		return fmt.Errorf("pack the broker configuration: %w", err)
	}
	if err := c.cli.CopyToContainer(ctx, c.ID, configDir, bytes.NewReader(archive), container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("write broker.config into container %q (%s): %w", c.Name, configDir, err)
	}
	c.log.Info("broker configuration written", "container", c.Name, "rabbitmq.conf keys", len(conf), "advanced.config keys", len(env))
	return nil
}
