// Command modproxy writes modules of a Git working tree, at a version, as
// a module proxy in the layout GOPROXY=file://DIR reads:
//
//	go run ./cmd/modproxy -repo ../.. -version v0.1.0 -out /tmp/proxy [PATH=DIR ...]
//
// Without PATH=DIR arguments it writes consumertest.Modules (the root
// module and the Prometheus module).
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/ratescope/ratescope/internal/consumertest"
)

func main() {
	repo := flag.String("repo", ".", "the Git working tree")
	version := flag.String("version", "", "the version to write, such as v0.1.0")
	out := flag.String("out", "", "the proxy directory to write into")
	flag.Parse()
	if *version == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "modproxy: -version and -out are required")
		os.Exit(2)
	}
	modules := consumertest.Modules
	if flag.NArg() > 0 {
		modules = nil
		for _, arg := range flag.Args() {
			p, d, ok := strings.Cut(arg, "=")
			if !ok {
				fmt.Fprintf(os.Stderr, "modproxy: %q: want PATH=DIR\n", arg)
				os.Exit(2)
			}
			modules = append(modules, consumertest.Module{Path: p, Dir: d})
		}
	}
	if err := consumertest.WriteProxy(*out, *repo, *version, modules); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}
