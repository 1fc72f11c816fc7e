package zktest

// SharedServers returns the client addresses of the shared cluster (see
// Shared), starting it on first use. It is for code that has no testing.TB,
// such as Example functions; it needs TestMain to call Main.
func SharedServers() ([]string, error) {
	c, err := sharedCluster()
	if err != nil {
		return nil, err
	}
	return c.Servers(), nil
}
