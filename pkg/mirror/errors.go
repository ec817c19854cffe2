package mirror

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// isRefusal tells whether a write failed because the event itself is
// refused (invalid, or not decodable), which no retry can change.
func isRefusal(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
}

// apierrorsFromObject is the error a watch.Error event carries.
func apierrorsFromObject(obj runtime.Object) error {
	return apierrors.FromObject(obj)
}
