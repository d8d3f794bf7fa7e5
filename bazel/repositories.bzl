"""Repositories that Bazel 4.2's py_test needs besides this workspace, online or offline.

Every py_test depends on `@rules_cc`, `@platforms`, `@rules_java` and `@remote_coverage_tools`,
which Bazel normally downloads. With network access nothing is special: `rules_cc` and
`remote_coverage_tools` are downloaded from the same URLs, with the same checksums, as Bazel
4.2.3's built-in defaults, and `platforms`/`rules_java` keep their built-in definitions.

`--config=offline` (.bazelrc) sets `--repo_env=TXL_BAZEL_OFFLINE=1`, under which the two
repositories below are generated locally instead of downloaded:
  * `rules_cc`: `cc/defs.bzl` re-exports Bazel's native C++ rules (this project has no C++;
    Debian's `bazel-rules-cc` is newer than Bazel 4.2.3 supports);
  * `remote_coverage_tools`: empty `coverage_report_generator` and `lcov_merger` filegroups
    (only `bazel coverage` would use them).
`platforms` and `rules_java` come from Debian's `bazel-platforms` and `bazel-rules-java`
packages under /usr/share/bazel, through `--override_repository` in the same config.
(These two stand-ins are generated here rather than given with `--override_repository`,
because Bazel 4.2.3 wants an absolute directory there and .bazelrc cannot name the checkout.)
"""

_OFFLINE_ENV = "TXL_BAZEL_OFFLINE"

_RULES_CC_DEFS = '''"""Offline stand-in for @rules_cc//cc:defs.bzl: Bazel's native C++ rules."""

cc_binary = native.cc_binary
cc_import = native.cc_import
cc_library = native.cc_library
cc_proto_library = native.cc_proto_library
cc_test = native.cc_test
cc_toolchain = native.cc_toolchain
cc_toolchain_suite = native.cc_toolchain_suite
fdo_prefetch_hints = native.fdo_prefetch_hints
fdo_profile = native.fdo_profile
objc_import = native.objc_import
objc_library = native.objc_library
'''

_OFFLINE_FILES = {
    "rules_cc": {
        "BUILD": "",
        "cc/BUILD": 'exports_files(["defs.bzl"])\n',
        "cc/defs.bzl": _RULES_CC_DEFS,
    },
    "remote_coverage_tools": {
        "BUILD": "\n".join([
            'package(default_visibility = ["//visibility:public"])',
            "",
            "# Offline stand-ins: only `bazel coverage` uses these tools.",
            'filegroup(name = "coverage_report_generator", srcs = [])',
            "",
            'filegroup(name = "lcov_merger", srcs = [])',
            "",
        ]),
    },
}

def _archive_or_offline_impl(ctx):
    if ctx.os.environ.get(_OFFLINE_ENV, "") == "1":
        for path, content in _OFFLINE_FILES[ctx.attr.offline_files].items():
            ctx.file(path, content, executable = False)
    else:
        ctx.download_and_extract(
            url = ctx.attr.urls,
            sha256 = ctx.attr.sha256,
            stripPrefix = ctx.attr.strip_prefix,
        )
    if not ctx.path("WORKSPACE").exists:
        ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % ctx.name, executable = False)

_archive_or_offline = repository_rule(
    implementation = _archive_or_offline_impl,
    attrs = {
        "urls": attr.string_list(mandatory = True),
        "sha256": attr.string(mandatory = True),
        "strip_prefix": attr.string(),
        "offline_files": attr.string(mandatory = True, values = _OFFLINE_FILES.keys()),
    },
    environ = [_OFFLINE_ENV],
    doc = "An http_archive, or under --repo_env=TXL_BAZEL_OFFLINE=1 a generated stand-in.",
)

def txl_bazel_repositories():
    """Defines `rules_cc` and `remote_coverage_tools` (call from WORKSPACE)."""

    # Same archive as Bazel 4.2.3's built-in `rules_cc` (cc_configure.WORKSPACE).
    _archive_or_offline(
        name = "rules_cc",
        sha256 = "d0c573b94a6ef20ef6ff20154a23d0efcb409fb0e1ff0979cec318dfe42f0cdd",
        strip_prefix = "rules_cc-b1c40e1de81913a3c40e5948f78719c28152486d",
        urls = [
            "https://mirror.bazel.build/github.com/bazelbuild/rules_cc/archive/b1c40e1de81913a3c40e5948f78719c28152486d.zip",
            "https://github.com/bazelbuild/rules_cc/archive/b1c40e1de81913a3c40e5948f78719c28152486d.zip",
        ],
        offline_files = "rules_cc",
    )

    # Same archive as Bazel 4.2.3's built-in `remote_coverage_tools` (coverage.WORKSPACE).
    _archive_or_offline(
        name = "remote_coverage_tools",
        sha256 = "cd14f1cb4559e4723e63b7e7b06d09fcc3bd7ba58d03f354cdff1439bd936a7d",
        urls = [
            "https://mirror.bazel.build/bazel_coverage_output_generator/releases/coverage_output_generator-v2.5.zip",
        ],
        offline_files = "remote_coverage_tools",
    )
