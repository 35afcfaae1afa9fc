package cmd

import "os"

// The tests run the command line as the binary does: with the repository's
// scenarios.yaml built in (main embeds it and sets Shipped).
func init() {
	b, err := os.ReadFile("../scenarios.yaml")
	if err != nil {
		panic(err)
	}
	Shipped = b
}
