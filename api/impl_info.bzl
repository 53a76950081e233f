"""impl_label_cc: writes the label that //api:impl resolves to as a C++ definition of qsa::api::kImplLabel."""

def _impl_label_cc_impl(ctx):
    label = str(ctx.attr.impl.label)
    ctx.actions.write(
        output = ctx.outputs.out,
        content = "namespace qsa { namespace api { extern char const kImplLabel[] = \"%s\"; } }\n" % label,
    )
    return [DefaultInfo(files = depset([ctx.outputs.out]))]

impl_label_cc = rule(
    implementation = _impl_label_cc_impl,
    attrs = {
        "impl": attr.label(mandatory = True),
        "out": attr.output(mandatory = True),
    },
)
