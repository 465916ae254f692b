package tinymux

// Mux routes requests to handlers and chains middleware around them.
type Mux struct {
	middlewares []func(Handler) Handler
	routes      map[string]Handler
}

// Use appends a middleware handler to the chain.
func (m *Mux) Use(mw func(Handler) Handler) {
	m.middlewares = append(m.middlewares, mw)
}

// chain wraps the endpoint with every middleware, last added innermost.
func (m *Mux) chain(endpoint Handler) Handler {
	h := endpoint
	for i := len(m.middlewares) - 1; i >= 0; i-- {
		h = m.middlewares[i](h)
	}
	return h
}
