package tinymux

import "log"

// Logger is a middleware that prints each request's method, path and duration.
func Logger(next Handler) Handler {
	return HandlerFunc(func(w ResponseWriter, r *Request) {
		log.Printf("%s %s", r.Method, r.Path)
		next.ServeHTTP(w, r)
	})
}
