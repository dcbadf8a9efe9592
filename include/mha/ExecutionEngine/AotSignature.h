/*===- AotSignature.h - the entry points mha-aot writes (C11) ----*- C -*-===*
 *
 * The signature of an entry point as mha-aot describes it, and the fixed
 * wrapper (AotWrapper.c) that calls the compiled function's C interface
 * from that description alone: descriptors of any rank are built at run
 * time, so what mha-aot writes per entry is data (the signature table) and
 * a stub that forwards `NAME` and `NAME_run` here.
 *
 * The block guarded by MHA_AOT_SIGNATURE_TYPES is public: mha-aot copies it
 * verbatim into every header it writes (which must stand alone), so two
 * such headers and this one may be included together.
 *
 *===---------------------------------------------------------------------===*/

#ifndef MHA_EXECUTIONENGINE_AOTSIGNATURE_H
#define MHA_EXECUTIONENGINE_AOTSIGNATURE_H

/* For MHA_RUNNER_SUPPORT_API, which mha-aot defines as hidden visibility
   here too: the shared objects it writes export only their entry points. */
#include "mha/ExecutionEngine/RunnerSupport.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef MHA_AOT_SIGNATURE_TYPES
#define MHA_AOT_SIGNATURE_TYPES
/* One array of a signature: its .npy dtype ("<f4" float32, "<f2" float16,
   "<u2" bfloat16 bits, "|b1" bool as one byte, "<i4" int32, "<i8" int64),
   rank and shape (-1: dynamic). */
struct mha_aot_array_info {
  const char *dtype;
  int64_t rank;
  const int64_t *shape;
};
struct mha_aot_signature {
  const char *entry;
  int64_t num_inputs;
  const struct mha_aot_array_info *inputs;
  int64_t num_outputs;
  const struct mha_aot_array_info *outputs;
};
/* Weights prepared once (an entry's NAME_prepare): what the compiled
   preparation returned, owned by this object (NAME_release frees it). */
struct mha_aot_prepared;
#endif

/* The limits of the wrapper: arguments, results and ranks (mha-aot refuses
   entries beyond them, with its own message). The C interface then takes at
   most MHA_AOT_MAX_ARRAYS + 1 pointers: the results' descriptors first, when
   there are results, then one descriptor per argument. */
#define MHA_AOT_MAX_ARRAYS 64
#define MHA_AOT_MAX_RANK 16

/* Status codes. The first three are those of the generated entry points
   (their header says so): success; a result's shape differs from the one
   given; an argument's shape differs from the signature's. The last one only
   a hand-written signature can get, mha-aot's never do: it is beyond the
   limits above, or has a dtype RunnerSupport does not know. */
#define MHA_AOT_OK 0
#define MHA_AOT_RESULT_SHAPE 1
#define MHA_AOT_ARGUMENT_SHAPE 2
#define MHA_AOT_BAD_SIGNATURE 3

/* The `_mlir_ciface_` function of an entry, whatever its arity: it is called
   back through its own type, `void (*)(void *, ..., void *)`. */
typedef void (*mha_aot_ciface)(void);

/* `NAME_run`: calls `ciface` on the dense row-major arrays `inputs[i]` of
   shapes `input_shapes[i]` (each static size must match the signature's:
   else MHA_AOT_ARGUMENT_SHAPE, and nothing is called). Each result comes
   back dense in a buffer from malloc (`outputs[j]`, the caller frees it) of
   shape `output_shapes[j]` (room for its rank). The descriptors the compiled
   code returned are freed where they are its own allocations: not an
   argument, not a constant (MLIR marks those 0xdeadbeef), not a buffer an
   earlier result already owns. */
MHA_RUNNER_SUPPORT_API int
mha_aot_run(const struct mha_aot_signature *sig, mha_aot_ciface ciface,
            void *const inputs[], const int64_t *const input_shapes[],
            void *outputs[], int64_t *const output_shapes[]);

/* `NAME`: the same on caller-owned dense arrays. `dims` holds the dynamic
   sizes in the order of NAME's parameters (each argument's, then each
   result's); static sizes come from the signature. Each result is copied to
   `results[j]` only when every result's shape is the one given (else
   MHA_AOT_RESULT_SHAPE, nothing written). A result that is an argument the
   function updated in place (a KV cache after mha.cache_append) is not
   copied when the caller passes the same array as that argument and as
   `results[j]`: a decoding step then writes only its new rows. */
MHA_RUNNER_SUPPORT_API int mha_aot_call(const struct mha_aot_signature *sig,
                                        mha_aot_ciface ciface,
                                        void *const inputs[],
                                        void *const results[],
                                        const int64_t dims[]);

/* `NAME_prepare`: calls `ciface` (the compiled NAME_prepare) on the weights
   `weights[i]`, dense arrays of `sig`'s inputs (its dynamic sizes in `dims`,
   in order; `sig` has no outputs), and keeps its `num_prepared` results,
   descriptors of ranks `ranks[j]`, in a new `*prepared`: MHA_AOT_OK, else
   MHA_AOT_ARGUMENT_SHAPE (or MHA_AOT_BAD_SIGNATURE) and `*prepared` NULL.
   The results are the compiled code's own buffers: the weights may be freed
   once it returns. */
MHA_RUNNER_SUPPORT_API int
mha_aot_prepare(const struct mha_aot_signature *sig, mha_aot_ciface ciface,
                int64_t num_prepared, const int64_t ranks[],
                void *const weights[], const int64_t dims[],
                struct mha_aot_prepared **prepared);

/* `NAME_prepared`: mha_aot_call of the compiled NAME_prepared, whose
   arguments are the prepared values, then `sig`'s inputs (the entry's
   arguments that are no weights). */
MHA_RUNNER_SUPPORT_API int
mha_aot_call_prepared(const struct mha_aot_signature *sig,
                      mha_aot_ciface ciface,
                      const struct mha_aot_prepared *prepared,
                      void *const inputs[], void *const results[],
                      const int64_t dims[]);

/* `NAME_run_device` (mha-aot --device-entry): calls `ciface`, the compiled
   function marked mha.device_resident, on device buffers: the dense
   row-major arrays `inputs[i]` of shapes `input_shapes[i]`, then each result
   j with `updates[j]` < 0 (else it updates argument updates[j] in place and
   `outputs[j]` is not used), written into `outputs[j]` of shape
   `output_shapes[j]`. Static sizes are checked here (MHA_AOT_ARGUMENT_SHAPE,
   MHA_AOT_RESULT_SHAPE: nothing is called); the compiled function checks
   the dynamic sizes of the results against the ones it computes and aborts
   on a mismatch. Nothing is copied between host and device. */
MHA_RUNNER_SUPPORT_API int
mha_aot_run_device(const struct mha_aot_signature *sig, mha_aot_ciface ciface,
                   const int64_t updates[], void *const inputs[],
                   const int64_t *const input_shapes[], void *const outputs[],
                   const int64_t *const output_shapes[]);

/* `NAME_device`: the same with the dynamic sizes in `dims`, in the order of
   NAME_device's parameters (each argument's, then each result's that is
   written into a buffer of the caller). */
MHA_RUNNER_SUPPORT_API int
mha_aot_call_device(const struct mha_aot_signature *sig, mha_aot_ciface ciface,
                    const int64_t updates[], void *const inputs[],
                    void *const results[], const int64_t dims[]);

/* `NAME_release`: frees what mha_aot_prepare made (NULL: nothing). */
MHA_RUNNER_SUPPORT_API void mha_aot_release(struct mha_aot_prepared *prepared);

#ifdef __cplusplus
}
#endif

#endif /* MHA_EXECUTIONENGINE_AOTSIGNATURE_H */
