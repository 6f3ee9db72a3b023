package envelope

// Registry is the closed action registry: each verb maps to the sub-verbs
// it covers. A verb exists only if the registry names it, as a key or as a
// sub-verb; there is no string-prefix inheritance (LIP-3 v0: a sub-verb is
// covered only through a registry edge).
type Registry map[string][]string

// RegistryV0 is the action registry v0 of the shared vectors
// (testdata/vectors/envelope/attenuation.json, registry_v0).
func RegistryV0() Registry {
	return Registry{
		"data:read":         {"data:read:public"},
		"data:write":        {},
		"finance:pay":       {"finance:pay:escrow", "finance:pay:release"},
		"compute:exec":      {"compute:exec:sandboxed"},
		"comm:send":         {},
		"identity:present":  {},
		"governance:revoke": {},
	}
}

// Known reports whether verb is named by the registry.
func (r Registry) Known(verb string) bool {
	if _, ok := r[verb]; ok {
		return true
	}
	for _, subs := range r {
		for _, s := range subs {
			if s == verb {
				return true
			}
		}
	}
	return false
}

// CoversAct reports whether parent covers child: both are known verbs and
// child is parent or reachable from it through registry edges.
func (r Registry) CoversAct(parent, child string) bool {
	if !r.Known(parent) || !r.Known(child) {
		return false
	}
	seen := map[string]bool{}
	stack := []string{parent}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if v == child {
			return true
		}
		if seen[v] {
			continue
		}
		seen[v] = true
		stack = append(stack, r[v]...)
	}
	return false
}
