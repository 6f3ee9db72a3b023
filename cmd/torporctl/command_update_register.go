package main

import (
	"context"
	"flag"
)

// update's rollout subcommand. The owner's side of updates (keys,
// sign-target, publish) registers "update" too where it is merged: this
// registration then gives way to a "rollout" case in its runUpdate.
func init() {
	register(&subcommand{
		name:  "update",
		args:  "rollout start|status|pause|resume|abort [ID] --relay URL --key FILE [--json]",
		short: "Staged rollouts of an agent build on the relay, as one of its operators (docs/updates.md).",
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
			if len(args) == 0 || args[0] != "rollout" {
				return usageError{"want rollout start, status, pause, resume or abort"}
			}
			return runUpdateRollout(ctx, e, fs, args[1:])
		},
	})
}
