package balance

// GuardConfig returns the configuration in force of g, defaults applied.
func GuardConfig(g *Guard) Config { return g.cfg }
