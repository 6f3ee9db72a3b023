package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	var cfg Config
	flag.StringVar(&cfg.Bin, "bin", "", "The directory holding torpor-relay, torpor-agent and torporctl.")
	flag.StringVar(&cfg.Dir, "dir", "", "The demo's working directory (empty or absent); everything the demo writes goes there.")
	flag.Float64Var(&cfg.Scale, "scale", DefaultScale, "The time scale given to every process (--time-scale): how many times faster than real time their clocks run (default 600 with -update).")
	flag.DurationVar(&cfg.Timeout, "timeout", 55*time.Second, "The longest the demo may run, in real time.")
	flag.BoolVar(&cfg.Update, "update", false, "Tell the story of one agent update rollout instead (the directory -bin names must hold update/torpor-agent, build 2 of the agent).")
	flag.BoolVar(&cfg.Cluster, "cluster", false, "Run three relays with --store jetstream on a 3-node NATS JetStream cluster embedded in this process, behind one balancer.")
	flag.Parse()
	scaleSet := false
	flag.Visit(func(f *flag.Flag) { scaleSet = scaleSet || f.Name == "scale" })
	if cfg.Update && !scaleSet {
		cfg.Scale = UpdateScale
	}
	if cfg.Bin == "" || cfg.Dir == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: torpor-demo -bin DIR -dir DIR [-scale N] [-timeout D] [-cluster | -update] (or: make demo)")
		os.Exit(2)
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, "torpor-demo:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, cfg); err != nil {
		os.Exit(1)
	}
}
