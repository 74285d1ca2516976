/* The list of models. */
#include <string.h>

#include "ana.h"

extern const struct model_ops model_comdetective;
extern const struct model_ops model_window;
extern const struct model_ops model_exact;
extern const struct model_ops model_signature;
extern const struct model_ops model_emulate;

const struct model_ops *const all_models[] = {
	&model_comdetective,
	&model_window,
	&model_exact,
	&model_signature,
	&model_emulate,
	NULL,
};

const struct model_ops *model_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; all_models[i]; i++)
		if (!strcmp(all_models[i]->name, name))
			return all_models[i];
	return NULL;
}
