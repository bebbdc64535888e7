from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CallingConvention(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CALLING_CONVENTION_UNSPECIFIED: _ClassVar[CallingConvention]
    CALLING_CONVENTION_C: _ClassVar[CallingConvention]
    CALLING_CONVENTION_NUMBA: _ClassVar[CallingConvention]

class Format(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FORMAT_UNSPECIFIED: _ClassVar[Format]
    FORMAT_LTOIR: _ClassVar[Format]
    FORMAT_BITCODE: _ClassVar[Format]

class Origin(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ORIGIN_UNSPECIFIED: _ClassVar[Origin]
    ORIGIN_COMPILED: _ClassVar[Origin]
    ORIGIN_MEMORY: _ClassVar[Origin]
    ORIGIN_DISK: _ClassVar[Origin]
    ORIGIN_REMOTE: _ClassVar[Origin]
CALLING_CONVENTION_UNSPECIFIED: CallingConvention
CALLING_CONVENTION_C: CallingConvention
CALLING_CONVENTION_NUMBA: CallingConvention
FORMAT_UNSPECIFIED: Format
FORMAT_LTOIR: Format
FORMAT_BITCODE: Format
ORIGIN_UNSPECIFIED: Origin
ORIGIN_COMPILED: Origin
ORIGIN_MEMORY: Origin
ORIGIN_DISK: Origin
ORIGIN_REMOTE: Origin

class CatalogRequest(_message.Message):
    __slots__ = ("cccl",)
    CCCL_FIELD_NUMBER: _ClassVar[int]
    cccl: str
    def __init__(self, cccl: _Optional[str] = ...) -> None: ...

class CcclInfo(_message.Message):
    __slots__ = ("name", "version", "include", "digest", "is_default", "origin", "unavailable", "probe")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    IS_DEFAULT_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    PROBE_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    include: str
    digest: str
    is_default: bool
    origin: str
    unavailable: _containers.RepeatedScalarFieldContainer[str]
    probe: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., include: _Optional[str] = ..., digest: _Optional[str] = ..., is_default: bool = ..., origin: _Optional[str] = ..., unavailable: _Optional[_Iterable[str]] = ..., probe: _Optional[str] = ...) -> None: ...

class CatalogMethod(_message.Message):
    __slots__ = ("name", "needs_op", "description", "op_kind")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NEEDS_OP_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    OP_KIND_FIELD_NUMBER: _ClassVar[int]
    name: str
    needs_op: bool
    description: str
    op_kind: str
    def __init__(self, name: _Optional[str] = ..., needs_op: bool = ..., description: _Optional[str] = ..., op_kind: _Optional[str] = ...) -> None: ...

class CatalogOpKind(_message.Message):
    __slots__ = ("name", "signature", "builtins")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    BUILTINS_FIELD_NUMBER: _ClassVar[int]
    name: str
    signature: str
    builtins: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., signature: _Optional[str] = ..., builtins: _Optional[_Iterable[str]] = ...) -> None: ...

class CatalogFamily(_message.Message):
    __slots__ = ("name", "description", "methods", "algorithms", "default_algorithm", "warp", "max_items_per_thread", "scan_options", "warp_multiple_algorithms", "exchange_options", "family_options", "dtypes", "power_of_two_threads", "available", "requires", "auto_algorithms", "auto_baseline", "auto_measured_method")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    METHODS_FIELD_NUMBER: _ClassVar[int]
    ALGORITHMS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    WARP_FIELD_NUMBER: _ClassVar[int]
    MAX_ITEMS_PER_THREAD_FIELD_NUMBER: _ClassVar[int]
    SCAN_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    WARP_MULTIPLE_ALGORITHMS_FIELD_NUMBER: _ClassVar[int]
    EXCHANGE_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    FAMILY_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    DTYPES_FIELD_NUMBER: _ClassVar[int]
    POWER_OF_TWO_THREADS_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_FIELD_NUMBER: _ClassVar[int]
    AUTO_ALGORITHMS_FIELD_NUMBER: _ClassVar[int]
    AUTO_BASELINE_FIELD_NUMBER: _ClassVar[int]
    AUTO_MEASURED_METHOD_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    methods: _containers.RepeatedCompositeFieldContainer[CatalogMethod]
    algorithms: _containers.RepeatedScalarFieldContainer[str]
    default_algorithm: str
    warp: bool
    max_items_per_thread: int
    scan_options: bool
    warp_multiple_algorithms: _containers.RepeatedScalarFieldContainer[str]
    exchange_options: bool
    family_options: str
    dtypes: _containers.RepeatedScalarFieldContainer[str]
    power_of_two_threads: bool
    available: bool
    requires: str
    auto_algorithms: _containers.RepeatedScalarFieldContainer[str]
    auto_baseline: str
    auto_measured_method: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., methods: _Optional[_Iterable[_Union[CatalogMethod, _Mapping]]] = ..., algorithms: _Optional[_Iterable[str]] = ..., default_algorithm: _Optional[str] = ..., warp: bool = ..., max_items_per_thread: _Optional[int] = ..., scan_options: bool = ..., warp_multiple_algorithms: _Optional[_Iterable[str]] = ..., exchange_options: bool = ..., family_options: _Optional[str] = ..., dtypes: _Optional[_Iterable[str]] = ..., power_of_two_threads: bool = ..., available: bool = ..., requires: _Optional[str] = ..., auto_algorithms: _Optional[_Iterable[str]] = ..., auto_baseline: _Optional[str] = ..., auto_measured_method: _Optional[str] = ...) -> None: ...

class CatalogResponse(_message.Message):
    __slots__ = ("families", "dtypes", "builtin_ops", "archs", "calling_conventions", "op_kinds", "bitcode_archs", "bitcode_unavailable", "cccls", "cccl")
    FAMILIES_FIELD_NUMBER: _ClassVar[int]
    DTYPES_FIELD_NUMBER: _ClassVar[int]
    BUILTIN_OPS_FIELD_NUMBER: _ClassVar[int]
    ARCHS_FIELD_NUMBER: _ClassVar[int]
    CALLING_CONVENTIONS_FIELD_NUMBER: _ClassVar[int]
    OP_KINDS_FIELD_NUMBER: _ClassVar[int]
    BITCODE_ARCHS_FIELD_NUMBER: _ClassVar[int]
    BITCODE_UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    CCCLS_FIELD_NUMBER: _ClassVar[int]
    CCCL_FIELD_NUMBER: _ClassVar[int]
    families: _containers.RepeatedCompositeFieldContainer[CatalogFamily]
    dtypes: _containers.RepeatedScalarFieldContainer[str]
    builtin_ops: _containers.RepeatedScalarFieldContainer[str]
    archs: _containers.RepeatedScalarFieldContainer[str]
    calling_conventions: _containers.RepeatedScalarFieldContainer[str]
    op_kinds: _containers.RepeatedCompositeFieldContainer[CatalogOpKind]
    bitcode_archs: _containers.RepeatedScalarFieldContainer[str]
    bitcode_unavailable: str
    cccls: _containers.RepeatedCompositeFieldContainer[CcclInfo]
    cccl: str
    def __init__(self, families: _Optional[_Iterable[_Union[CatalogFamily, _Mapping]]] = ..., dtypes: _Optional[_Iterable[str]] = ..., builtin_ops: _Optional[_Iterable[str]] = ..., archs: _Optional[_Iterable[str]] = ..., calling_conventions: _Optional[_Iterable[str]] = ..., op_kinds: _Optional[_Iterable[_Union[CatalogOpKind, _Mapping]]] = ..., bitcode_archs: _Optional[_Iterable[str]] = ..., bitcode_unavailable: _Optional[str] = ..., cccls: _Optional[_Iterable[_Union[CcclInfo, _Mapping]]] = ..., cccl: _Optional[str] = ...) -> None: ...

class Dim3(_message.Message):
    __slots__ = ("x", "y", "z")
    X_FIELD_NUMBER: _ClassVar[int]
    Y_FIELD_NUMBER: _ClassVar[int]
    Z_FIELD_NUMBER: _ClassVar[int]
    x: int
    y: int
    z: int
    def __init__(self, x: _Optional[int] = ..., y: _Optional[int] = ..., z: _Optional[int] = ...) -> None: ...

class Operator(_message.Message):
    __slots__ = ("builtin", "user")
    BUILTIN_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    builtin: str
    user: UserOperator
    def __init__(self, builtin: _Optional[str] = ..., user: _Optional[_Union[UserOperator, _Mapping]] = ...) -> None: ...

class UserOperator(_message.Message):
    __slots__ = ("name", "source", "ltoir", "operand_dtypes", "result_dtype", "stateful", "user_type", "digest", "commutative", "by_pointer")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    LTOIR_FIELD_NUMBER: _ClassVar[int]
    OPERAND_DTYPES_FIELD_NUMBER: _ClassVar[int]
    RESULT_DTYPE_FIELD_NUMBER: _ClassVar[int]
    STATEFUL_FIELD_NUMBER: _ClassVar[int]
    USER_TYPE_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    COMMUTATIVE_FIELD_NUMBER: _ClassVar[int]
    BY_POINTER_FIELD_NUMBER: _ClassVar[int]
    name: str
    source: str
    ltoir: bytes
    operand_dtypes: _containers.RepeatedScalarFieldContainer[str]
    result_dtype: str
    stateful: bool
    user_type: UserType
    digest: str
    commutative: bool
    by_pointer: bool
    def __init__(self, name: _Optional[str] = ..., source: _Optional[str] = ..., ltoir: _Optional[bytes] = ..., operand_dtypes: _Optional[_Iterable[str]] = ..., result_dtype: _Optional[str] = ..., stateful: bool = ..., user_type: _Optional[_Union[UserType, _Mapping]] = ..., digest: _Optional[str] = ..., commutative: bool = ..., by_pointer: bool = ...) -> None: ...

class ScanOptions(_message.Message):
    __slots__ = ("with_aggregate",)
    WITH_AGGREGATE_FIELD_NUMBER: _ClassVar[int]
    with_aggregate: bool
    def __init__(self, with_aggregate: bool = ...) -> None: ...

class ExchangeOptions(_message.Message):
    __slots__ = ("warp_time_slicing",)
    WARP_TIME_SLICING_FIELD_NUMBER: _ClassVar[int]
    warp_time_slicing: bool
    def __init__(self, warp_time_slicing: bool = ...) -> None: ...

class RadixSortOptions(_message.Message):
    __slots__ = ("value_dtype", "radix_bits")
    VALUE_DTYPE_FIELD_NUMBER: _ClassVar[int]
    RADIX_BITS_FIELD_NUMBER: _ClassVar[int]
    value_dtype: str
    radix_bits: int
    def __init__(self, value_dtype: _Optional[str] = ..., radix_bits: _Optional[int] = ...) -> None: ...

class MergeSortOptions(_message.Message):
    __slots__ = ("value_dtype",)
    VALUE_DTYPE_FIELD_NUMBER: _ClassVar[int]
    value_dtype: str
    def __init__(self, value_dtype: _Optional[str] = ...) -> None: ...

class HistogramOptions(_message.Message):
    __slots__ = ("bins",)
    BINS_FIELD_NUMBER: _ClassVar[int]
    bins: int
    def __init__(self, bins: _Optional[int] = ...) -> None: ...

class UserType(_message.Message):
    __slots__ = ("size", "align")
    SIZE_FIELD_NUMBER: _ClassVar[int]
    ALIGN_FIELD_NUMBER: _ClassVar[int]
    size: int
    align: int
    def __init__(self, size: _Optional[int] = ..., align: _Optional[int] = ...) -> None: ...

class TopKOptions(_message.Message):
    __slots__ = ("value_dtype", "valid_items")
    VALUE_DTYPE_FIELD_NUMBER: _ClassVar[int]
    VALID_ITEMS_FIELD_NUMBER: _ClassVar[int]
    value_dtype: str
    valid_items: bool
    def __init__(self, value_dtype: _Optional[str] = ..., valid_items: bool = ...) -> None: ...

class RunLengthDecodeOptions(_message.Message):
    __slots__ = ("decoded_items_per_thread",)
    DECODED_ITEMS_PER_THREAD_FIELD_NUMBER: _ClassVar[int]
    decoded_items_per_thread: int
    def __init__(self, decoded_items_per_thread: _Optional[int] = ...) -> None: ...

class RadixRankOptions(_message.Message):
    __slots__ = ("radix_bits",)
    RADIX_BITS_FIELD_NUMBER: _ClassVar[int]
    radix_bits: int
    def __init__(self, radix_bits: _Optional[int] = ...) -> None: ...

class PrimitiveSpec(_message.Message):
    __slots__ = ("family", "method", "dtype", "block", "items_per_thread", "algorithm", "op", "warp_threads", "arch", "calling_convention", "user_type", "prefix_callback", "scan", "exchange", "radix_sort", "merge_sort", "histogram", "run_length_decode", "radix_rank", "top_k", "cccl")
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    ITEMS_PER_THREAD_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    WARP_THREADS_FIELD_NUMBER: _ClassVar[int]
    ARCH_FIELD_NUMBER: _ClassVar[int]
    CALLING_CONVENTION_FIELD_NUMBER: _ClassVar[int]
    USER_TYPE_FIELD_NUMBER: _ClassVar[int]
    PREFIX_CALLBACK_FIELD_NUMBER: _ClassVar[int]
    SCAN_FIELD_NUMBER: _ClassVar[int]
    EXCHANGE_FIELD_NUMBER: _ClassVar[int]
    RADIX_SORT_FIELD_NUMBER: _ClassVar[int]
    MERGE_SORT_FIELD_NUMBER: _ClassVar[int]
    HISTOGRAM_FIELD_NUMBER: _ClassVar[int]
    RUN_LENGTH_DECODE_FIELD_NUMBER: _ClassVar[int]
    RADIX_RANK_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    CCCL_FIELD_NUMBER: _ClassVar[int]
    family: str
    method: str
    dtype: str
    block: Dim3
    items_per_thread: int
    algorithm: str
    op: Operator
    warp_threads: int
    arch: str
    calling_convention: CallingConvention
    user_type: UserType
    prefix_callback: UserOperator
    scan: ScanOptions
    exchange: ExchangeOptions
    radix_sort: RadixSortOptions
    merge_sort: MergeSortOptions
    histogram: HistogramOptions
    run_length_decode: RunLengthDecodeOptions
    radix_rank: RadixRankOptions
    top_k: TopKOptions
    cccl: str
    def __init__(self, family: _Optional[str] = ..., method: _Optional[str] = ..., dtype: _Optional[str] = ..., block: _Optional[_Union[Dim3, _Mapping]] = ..., items_per_thread: _Optional[int] = ..., algorithm: _Optional[str] = ..., op: _Optional[_Union[Operator, _Mapping]] = ..., warp_threads: _Optional[int] = ..., arch: _Optional[str] = ..., calling_convention: _Optional[_Union[CallingConvention, str]] = ..., user_type: _Optional[_Union[UserType, _Mapping]] = ..., prefix_callback: _Optional[_Union[UserOperator, _Mapping]] = ..., scan: _Optional[_Union[ScanOptions, _Mapping]] = ..., exchange: _Optional[_Union[ExchangeOptions, _Mapping]] = ..., radix_sort: _Optional[_Union[RadixSortOptions, _Mapping]] = ..., merge_sort: _Optional[_Union[MergeSortOptions, _Mapping]] = ..., histogram: _Optional[_Union[HistogramOptions, _Mapping]] = ..., run_length_decode: _Optional[_Union[RunLengthDecodeOptions, _Mapping]] = ..., radix_rank: _Optional[_Union[RadixRankOptions, _Mapping]] = ..., top_k: _Optional[_Union[TopKOptions, _Mapping]] = ..., cccl: _Optional[str] = ...) -> None: ...

class SpecializeRequest(_message.Message):
    __slots__ = ("spec", "client", "formats", "have")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    FORMATS_FIELD_NUMBER: _ClassVar[int]
    HAVE_FIELD_NUMBER: _ClassVar[int]
    spec: PrimitiveSpec
    client: str
    formats: _containers.RepeatedScalarFieldContainer[Format]
    have: _containers.RepeatedCompositeFieldContainer[HeldArtifact]
    def __init__(self, spec: _Optional[_Union[PrimitiveSpec, _Mapping]] = ..., client: _Optional[str] = ..., formats: _Optional[_Iterable[_Union[Format, str]]] = ..., have: _Optional[_Iterable[_Union[HeldArtifact, _Mapping]]] = ...) -> None: ...

class HeldArtifact(_message.Message):
    __slots__ = ("format", "key", "digest", "holds_metadata")
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    HOLDS_METADATA_FIELD_NUMBER: _ClassVar[int]
    format: Format
    key: str
    digest: str
    holds_metadata: bool
    def __init__(self, format: _Optional[_Union[Format, str]] = ..., key: _Optional[str] = ..., digest: _Optional[str] = ..., holds_metadata: bool = ...) -> None: ...

class SpecializeBundleRequest(_message.Message):
    __slots__ = ("specs", "client", "formats", "have")
    SPECS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    FORMATS_FIELD_NUMBER: _ClassVar[int]
    HAVE_FIELD_NUMBER: _ClassVar[int]
    specs: _containers.RepeatedCompositeFieldContainer[PrimitiveSpec]
    client: str
    formats: _containers.RepeatedScalarFieldContainer[Format]
    have: _containers.RepeatedCompositeFieldContainer[HeldArtifact]
    def __init__(self, specs: _Optional[_Iterable[_Union[PrimitiveSpec, _Mapping]]] = ..., client: _Optional[str] = ..., formats: _Optional[_Iterable[_Union[Format, str]]] = ..., have: _Optional[_Iterable[_Union[HeldArtifact, _Mapping]]] = ...) -> None: ...

class Entry(_message.Message):
    __slots__ = ("symbol", "declaration", "description")
    SYMBOL_FIELD_NUMBER: _ClassVar[int]
    DECLARATION_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    symbol: str
    declaration: str
    description: str
    def __init__(self, symbol: _Optional[str] = ..., declaration: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class TempStorage(_message.Message):
    __slots__ = ("bytes", "align")
    BYTES_FIELD_NUMBER: _ClassVar[int]
    ALIGN_FIELD_NUMBER: _ClassVar[int]
    bytes: int
    align: int
    def __init__(self, bytes: _Optional[int] = ..., align: _Optional[int] = ...) -> None: ...

class Toolchain(_message.Message):
    __slots__ = ("nvrtc_version", "nvjitlink_version", "cccl_version", "header_digest", "clang_version", "cccl_name")
    NVRTC_VERSION_FIELD_NUMBER: _ClassVar[int]
    NVJITLINK_VERSION_FIELD_NUMBER: _ClassVar[int]
    CCCL_VERSION_FIELD_NUMBER: _ClassVar[int]
    HEADER_DIGEST_FIELD_NUMBER: _ClassVar[int]
    CLANG_VERSION_FIELD_NUMBER: _ClassVar[int]
    CCCL_NAME_FIELD_NUMBER: _ClassVar[int]
    nvrtc_version: str
    nvjitlink_version: str
    cccl_version: str
    header_digest: str
    clang_version: str
    cccl_name: str
    def __init__(self, nvrtc_version: _Optional[str] = ..., nvjitlink_version: _Optional[str] = ..., cccl_version: _Optional[str] = ..., header_digest: _Optional[str] = ..., clang_version: _Optional[str] = ..., cccl_name: _Optional[str] = ...) -> None: ...

class BitcodeModule(_message.Message):
    __slots__ = ("key", "data", "origin", "compile_ms", "compile_log", "pch_status", "digest")
    KEY_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    COMPILE_MS_FIELD_NUMBER: _ClassVar[int]
    COMPILE_LOG_FIELD_NUMBER: _ClassVar[int]
    PCH_STATUS_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    key: str
    data: bytes
    origin: Origin
    compile_ms: float
    compile_log: str
    pch_status: str
    digest: str
    def __init__(self, key: _Optional[str] = ..., data: _Optional[bytes] = ..., origin: _Optional[_Union[Origin, str]] = ..., compile_ms: _Optional[float] = ..., compile_log: _Optional[str] = ..., pch_status: _Optional[str] = ..., digest: _Optional[str] = ...) -> None: ...

class AlgorithmChoice(_message.Message):
    __slots__ = ("requested", "chosen", "reason", "table_version", "table_digest")
    REQUESTED_FIELD_NUMBER: _ClassVar[int]
    CHOSEN_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TABLE_VERSION_FIELD_NUMBER: _ClassVar[int]
    TABLE_DIGEST_FIELD_NUMBER: _ClassVar[int]
    requested: str
    chosen: str
    reason: str
    table_version: str
    table_digest: str
    def __init__(self, requested: _Optional[str] = ..., chosen: _Optional[str] = ..., reason: _Optional[str] = ..., table_version: _Optional[str] = ..., table_digest: _Optional[str] = ...) -> None: ...

class ArtifactPart(_message.Message):
    __slots__ = ("spec", "entries", "temp_storage", "algorithm_choice")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    TEMP_STORAGE_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_CHOICE_FIELD_NUMBER: _ClassVar[int]
    spec: PrimitiveSpec
    entries: _containers.RepeatedCompositeFieldContainer[Entry]
    temp_storage: TempStorage
    algorithm_choice: AlgorithmChoice
    def __init__(self, spec: _Optional[_Union[PrimitiveSpec, _Mapping]] = ..., entries: _Optional[_Iterable[_Union[Entry, _Mapping]]] = ..., temp_storage: _Optional[_Union[TempStorage, _Mapping]] = ..., algorithm_choice: _Optional[_Union[AlgorithmChoice, _Mapping]] = ...) -> None: ...

class Artifact(_message.Message):
    __slots__ = ("key", "ltoir", "entries", "temp_storage", "arch", "toolchain", "spec", "compile_ms", "compile_log", "source", "origin", "parts", "pch_status", "layout_ms", "link_inputs", "type_definitions", "bitcode", "formats", "algorithm_choice", "digest", "bytes_omitted")
    KEY_FIELD_NUMBER: _ClassVar[int]
    LTOIR_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    TEMP_STORAGE_FIELD_NUMBER: _ClassVar[int]
    ARCH_FIELD_NUMBER: _ClassVar[int]
    TOOLCHAIN_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    COMPILE_MS_FIELD_NUMBER: _ClassVar[int]
    COMPILE_LOG_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    PCH_STATUS_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_MS_FIELD_NUMBER: _ClassVar[int]
    LINK_INPUTS_FIELD_NUMBER: _ClassVar[int]
    TYPE_DEFINITIONS_FIELD_NUMBER: _ClassVar[int]
    BITCODE_FIELD_NUMBER: _ClassVar[int]
    FORMATS_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_CHOICE_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    BYTES_OMITTED_FIELD_NUMBER: _ClassVar[int]
    key: str
    ltoir: bytes
    entries: _containers.RepeatedCompositeFieldContainer[Entry]
    temp_storage: TempStorage
    arch: str
    toolchain: Toolchain
    spec: PrimitiveSpec
    compile_ms: float
    compile_log: str
    source: str
    origin: Origin
    parts: _containers.RepeatedCompositeFieldContainer[ArtifactPart]
    pch_status: str
    layout_ms: float
    link_inputs: _containers.RepeatedCompositeFieldContainer[ArtifactLinkInput]
    type_definitions: str
    bitcode: BitcodeModule
    formats: _containers.RepeatedScalarFieldContainer[Format]
    algorithm_choice: AlgorithmChoice
    digest: str
    bytes_omitted: bool
    def __init__(self, key: _Optional[str] = ..., ltoir: _Optional[bytes] = ..., entries: _Optional[_Iterable[_Union[Entry, _Mapping]]] = ..., temp_storage: _Optional[_Union[TempStorage, _Mapping]] = ..., arch: _Optional[str] = ..., toolchain: _Optional[_Union[Toolchain, _Mapping]] = ..., spec: _Optional[_Union[PrimitiveSpec, _Mapping]] = ..., compile_ms: _Optional[float] = ..., compile_log: _Optional[str] = ..., source: _Optional[str] = ..., origin: _Optional[_Union[Origin, str]] = ..., parts: _Optional[_Iterable[_Union[ArtifactPart, _Mapping]]] = ..., pch_status: _Optional[str] = ..., layout_ms: _Optional[float] = ..., link_inputs: _Optional[_Iterable[_Union[ArtifactLinkInput, _Mapping]]] = ..., type_definitions: _Optional[str] = ..., bitcode: _Optional[_Union[BitcodeModule, _Mapping]] = ..., formats: _Optional[_Iterable[_Union[Format, str]]] = ..., algorithm_choice: _Optional[_Union[AlgorithmChoice, _Mapping]] = ..., digest: _Optional[str] = ..., bytes_omitted: bool = ...) -> None: ...

class ArtifactLinkInput(_message.Message):
    __slots__ = ("symbol", "key", "ltoir", "bitcode", "bitcode_key")
    SYMBOL_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    LTOIR_FIELD_NUMBER: _ClassVar[int]
    BITCODE_FIELD_NUMBER: _ClassVar[int]
    BITCODE_KEY_FIELD_NUMBER: _ClassVar[int]
    symbol: str
    key: str
    ltoir: bytes
    bitcode: bytes
    bitcode_key: str
    def __init__(self, symbol: _Optional[str] = ..., key: _Optional[str] = ..., ltoir: _Optional[bytes] = ..., bitcode: _Optional[bytes] = ..., bitcode_key: _Optional[str] = ...) -> None: ...

class LinkModule(_message.Message):
    __slots__ = ("kind", "name", "data")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[LinkModule.Kind]
        KIND_LTOIR: _ClassVar[LinkModule.Kind]
        KIND_PTX: _ClassVar[LinkModule.Kind]
    KIND_UNSPECIFIED: LinkModule.Kind
    KIND_LTOIR: LinkModule.Kind
    KIND_PTX: LinkModule.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    kind: LinkModule.Kind
    name: str
    data: bytes
    def __init__(self, kind: _Optional[_Union[LinkModule.Kind, str]] = ..., name: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class LinkRequest(_message.Message):
    __slots__ = ("arch", "modules", "artifact_keys", "options", "keep_unused_variables", "client")
    ARCH_FIELD_NUMBER: _ClassVar[int]
    MODULES_FIELD_NUMBER: _ClassVar[int]
    ARTIFACT_KEYS_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    KEEP_UNUSED_VARIABLES_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    arch: str
    modules: _containers.RepeatedCompositeFieldContainer[LinkModule]
    artifact_keys: _containers.RepeatedScalarFieldContainer[str]
    options: _containers.RepeatedScalarFieldContainer[str]
    keep_unused_variables: bool
    client: str
    def __init__(self, arch: _Optional[str] = ..., modules: _Optional[_Iterable[_Union[LinkModule, _Mapping]]] = ..., artifact_keys: _Optional[_Iterable[str]] = ..., options: _Optional[_Iterable[str]] = ..., keep_unused_variables: bool = ..., client: _Optional[str] = ...) -> None: ...

class LinkResponse(_message.Message):
    __slots__ = ("cubin", "key", "origin", "link_ms", "options")
    CUBIN_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    LINK_MS_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    cubin: bytes
    key: str
    origin: Origin
    link_ms: float
    options: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, cubin: _Optional[bytes] = ..., key: _Optional[str] = ..., origin: _Optional[_Union[Origin, str]] = ..., link_ms: _Optional[float] = ..., options: _Optional[_Iterable[str]] = ...) -> None: ...

class SpecializeResponse(_message.Message):
    __slots__ = ("artifact",)
    ARTIFACT_FIELD_NUMBER: _ClassVar[int]
    artifact: Artifact
    def __init__(self, artifact: _Optional[_Union[Artifact, _Mapping]] = ...) -> None: ...

class GetStatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class KeyComponent(_message.Message):
    __slots__ = ("name", "value", "digest")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    digest: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ..., digest: _Optional[str] = ...) -> None: ...

class KeyComponents(_message.Message):
    __slots__ = ("components",)
    COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    components: _containers.RepeatedCompositeFieldContainer[KeyComponent]
    def __init__(self, components: _Optional[_Iterable[_Union[KeyComponent, _Mapping]]] = ...) -> None: ...

class ExplainResponse(_message.Message):
    __slots__ = ("key", "components", "cached", "others", "auto_choice")
    KEY_FIELD_NUMBER: _ClassVar[int]
    COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    OTHERS_FIELD_NUMBER: _ClassVar[int]
    AUTO_CHOICE_FIELD_NUMBER: _ClassVar[int]
    key: str
    components: _containers.RepeatedCompositeFieldContainer[KeyComponent]
    cached: bool
    others: _containers.RepeatedCompositeFieldContainer[OtherKey]
    auto_choice: AutoExplanation
    def __init__(self, key: _Optional[str] = ..., components: _Optional[_Iterable[_Union[KeyComponent, _Mapping]]] = ..., cached: bool = ..., others: _Optional[_Iterable[_Union[OtherKey, _Mapping]]] = ..., auto_choice: _Optional[_Union[AutoExplanation, _Mapping]] = ...) -> None: ...

class TuningMeasurement(_message.Message):
    __slots__ = ("algorithm", "median_gbps", "min_gbps", "max_gbps", "n", "eligible")
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    MEDIAN_GBPS_FIELD_NUMBER: _ClassVar[int]
    MIN_GBPS_FIELD_NUMBER: _ClassVar[int]
    MAX_GBPS_FIELD_NUMBER: _ClassVar[int]
    N_FIELD_NUMBER: _ClassVar[int]
    ELIGIBLE_FIELD_NUMBER: _ClassVar[int]
    algorithm: str
    median_gbps: float
    min_gbps: float
    max_gbps: float
    n: int
    eligible: bool
    def __init__(self, algorithm: _Optional[str] = ..., median_gbps: _Optional[float] = ..., min_gbps: _Optional[float] = ..., max_gbps: _Optional[float] = ..., n: _Optional[int] = ..., eligible: bool = ...) -> None: ...

class TuningCell(_message.Message):
    __slots__ = ("family", "method", "dtype_size", "threads", "items_per_thread", "run", "choice")
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    DTYPE_SIZE_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    ITEMS_PER_THREAD_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    CHOICE_FIELD_NUMBER: _ClassVar[int]
    family: str
    method: str
    dtype_size: int
    threads: int
    items_per_thread: int
    run: str
    choice: str
    def __init__(self, family: _Optional[str] = ..., method: _Optional[str] = ..., dtype_size: _Optional[int] = ..., threads: _Optional[int] = ..., items_per_thread: _Optional[int] = ..., run: _Optional[str] = ..., choice: _Optional[str] = ...) -> None: ...

class AutoExplanation(_message.Message):
    __slots__ = ("choice", "eligible", "filtered_out", "baseline", "dtype_size", "threads", "items_per_thread", "measured_method", "table_arch", "rule", "cell", "distance", "measured")
    CHOICE_FIELD_NUMBER: _ClassVar[int]
    ELIGIBLE_FIELD_NUMBER: _ClassVar[int]
    FILTERED_OUT_FIELD_NUMBER: _ClassVar[int]
    BASELINE_FIELD_NUMBER: _ClassVar[int]
    DTYPE_SIZE_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    ITEMS_PER_THREAD_FIELD_NUMBER: _ClassVar[int]
    MEASURED_METHOD_FIELD_NUMBER: _ClassVar[int]
    TABLE_ARCH_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    CELL_FIELD_NUMBER: _ClassVar[int]
    DISTANCE_FIELD_NUMBER: _ClassVar[int]
    MEASURED_FIELD_NUMBER: _ClassVar[int]
    choice: AlgorithmChoice
    eligible: _containers.RepeatedScalarFieldContainer[str]
    filtered_out: _containers.RepeatedScalarFieldContainer[str]
    baseline: str
    dtype_size: int
    threads: int
    items_per_thread: int
    measured_method: str
    table_arch: str
    rule: str
    cell: TuningCell
    distance: float
    measured: _containers.RepeatedCompositeFieldContainer[TuningMeasurement]
    def __init__(self, choice: _Optional[_Union[AlgorithmChoice, _Mapping]] = ..., eligible: _Optional[_Iterable[str]] = ..., filtered_out: _Optional[_Iterable[str]] = ..., baseline: _Optional[str] = ..., dtype_size: _Optional[int] = ..., threads: _Optional[int] = ..., items_per_thread: _Optional[int] = ..., measured_method: _Optional[str] = ..., table_arch: _Optional[str] = ..., rule: _Optional[str] = ..., cell: _Optional[_Union[TuningCell, _Mapping]] = ..., distance: _Optional[float] = ..., measured: _Optional[_Iterable[_Union[TuningMeasurement, _Mapping]]] = ...) -> None: ...

class OtherKey(_message.Message):
    __slots__ = ("key", "differing", "created_at")
    KEY_FIELD_NUMBER: _ClassVar[int]
    DIFFERING_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    key: str
    differing: _containers.RepeatedScalarFieldContainer[str]
    created_at: int
    def __init__(self, key: _Optional[str] = ..., differing: _Optional[_Iterable[str]] = ..., created_at: _Optional[int] = ...) -> None: ...

class CacheFilter(_message.Message):
    __slots__ = ("family", "dtype", "arch")
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    ARCH_FIELD_NUMBER: _ClassVar[int]
    family: str
    dtype: str
    arch: str
    def __init__(self, family: _Optional[str] = ..., dtype: _Optional[str] = ..., arch: _Optional[str] = ...) -> None: ...

class ListEntriesRequest(_message.Message):
    __slots__ = ("filter", "limit", "with_specs")
    FILTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    WITH_SPECS_FIELD_NUMBER: _ClassVar[int]
    filter: CacheFilter
    limit: int
    with_specs: bool
    def __init__(self, filter: _Optional[_Union[CacheFilter, _Mapping]] = ..., limit: _Optional[int] = ..., with_specs: bool = ...) -> None: ...

class CacheEntry(_message.Message):
    __slots__ = ("key", "family", "dtype", "arch", "raw_bytes", "stored_bytes", "created_at", "last_access", "specs", "format")
    KEY_FIELD_NUMBER: _ClassVar[int]
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    ARCH_FIELD_NUMBER: _ClassVar[int]
    RAW_BYTES_FIELD_NUMBER: _ClassVar[int]
    STORED_BYTES_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_ACCESS_FIELD_NUMBER: _ClassVar[int]
    SPECS_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    key: str
    family: str
    dtype: str
    arch: str
    raw_bytes: int
    stored_bytes: int
    created_at: int
    last_access: int
    specs: _containers.RepeatedCompositeFieldContainer[PrimitiveSpec]
    format: Format
    def __init__(self, key: _Optional[str] = ..., family: _Optional[str] = ..., dtype: _Optional[str] = ..., arch: _Optional[str] = ..., raw_bytes: _Optional[int] = ..., stored_bytes: _Optional[int] = ..., created_at: _Optional[int] = ..., last_access: _Optional[int] = ..., specs: _Optional[_Iterable[_Union[PrimitiveSpec, _Mapping]]] = ..., format: _Optional[_Union[Format, str]] = ...) -> None: ...

class ListEntriesResponse(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[CacheEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[CacheEntry, _Mapping]]] = ...) -> None: ...

class PurgeRequest(_message.Message):
    __slots__ = ("filter", "all")
    FILTER_FIELD_NUMBER: _ClassVar[int]
    ALL_FIELD_NUMBER: _ClassVar[int]
    filter: CacheFilter
    all: bool
    def __init__(self, filter: _Optional[_Union[CacheFilter, _Mapping]] = ..., all: bool = ...) -> None: ...

class PurgeResponse(_message.Message):
    __slots__ = ("entries_removed",)
    ENTRIES_REMOVED_FIELD_NUMBER: _ClassVar[int]
    entries_removed: int
    def __init__(self, entries_removed: _Optional[int] = ...) -> None: ...

class VerifyRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class VerifyResponse(_message.Message):
    __slots__ = ("entries_checked", "blobs_checked", "bad_removed", "bad_keys", "totals_corrected")
    ENTRIES_CHECKED_FIELD_NUMBER: _ClassVar[int]
    BLOBS_CHECKED_FIELD_NUMBER: _ClassVar[int]
    BAD_REMOVED_FIELD_NUMBER: _ClassVar[int]
    BAD_KEYS_FIELD_NUMBER: _ClassVar[int]
    TOTALS_CORRECTED_FIELD_NUMBER: _ClassVar[int]
    entries_checked: int
    blobs_checked: int
    bad_removed: int
    bad_keys: _containers.RepeatedScalarFieldContainer[str]
    totals_corrected: bool
    def __init__(self, entries_checked: _Optional[int] = ..., blobs_checked: _Optional[int] = ..., bad_removed: _Optional[int] = ..., bad_keys: _Optional[_Iterable[str]] = ..., totals_corrected: bool = ...) -> None: ...

class VacuumRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class VacuumResponse(_message.Message):
    __slots__ = ("file_bytes_before", "file_bytes_after")
    FILE_BYTES_BEFORE_FIELD_NUMBER: _ClassVar[int]
    FILE_BYTES_AFTER_FIELD_NUMBER: _ClassVar[int]
    file_bytes_before: int
    file_bytes_after: int
    def __init__(self, file_bytes_before: _Optional[int] = ..., file_bytes_after: _Optional[int] = ...) -> None: ...

class TierStats(_message.Message):
    __slots__ = ("name", "hits", "misses", "entries", "bytes", "raw_bytes", "budget_bytes", "evictions", "corruptions", "write_failures", "degraded", "evicting")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    MISSES_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    RAW_BYTES_FIELD_NUMBER: _ClassVar[int]
    BUDGET_BYTES_FIELD_NUMBER: _ClassVar[int]
    EVICTIONS_FIELD_NUMBER: _ClassVar[int]
    CORRUPTIONS_FIELD_NUMBER: _ClassVar[int]
    WRITE_FAILURES_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_FIELD_NUMBER: _ClassVar[int]
    EVICTING_FIELD_NUMBER: _ClassVar[int]
    name: str
    hits: int
    misses: int
    entries: int
    bytes: int
    raw_bytes: int
    budget_bytes: int
    evictions: int
    corruptions: int
    write_failures: int
    degraded: bool
    evicting: bool
    def __init__(self, name: _Optional[str] = ..., hits: _Optional[int] = ..., misses: _Optional[int] = ..., entries: _Optional[int] = ..., bytes: _Optional[int] = ..., raw_bytes: _Optional[int] = ..., budget_bytes: _Optional[int] = ..., evictions: _Optional[int] = ..., corruptions: _Optional[int] = ..., write_failures: _Optional[int] = ..., degraded: bool = ..., evicting: bool = ...) -> None: ...

class Stats(_message.Message):
    __slots__ = ("requests", "invalid_requests", "memory_hits", "disk_hits", "misses", "compiles", "compile_failures", "compile_ms_total", "memory_entries", "memory_bytes", "disk_entries", "disk_bytes", "disk_write_failures", "uptime_s", "toolchain", "cache_path", "pch_warm_compiles", "joined_requests", "worker_restarts", "worker_crashes", "compile_timeouts", "queue_depth", "workers", "workers_busy", "compile_ms_p50", "compile_ms_p90", "compile_ms_p99", "worker_status", "links", "link_failures", "link_hits", "bundles", "tiers", "corruptions", "evictions", "cache_degraded", "bitcode_compiles", "remote_hits", "remote", "listeners", "unauthenticated_calls", "denied_calls", "client_in_flight_refusals", "client_rate_refusals", "undecodable_requests", "oversized_requests", "memo_hits", "memo_misses", "memo_entries", "memo_evictions", "digest_only_replies", "bytes_omitted", "tuning_tables", "tuning_digest", "auto_resolutions", "requests_cancelled", "compiles_cancelled", "quota_compile_refusals", "quota_bytes_refusals", "cccls")
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    INVALID_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_HITS_FIELD_NUMBER: _ClassVar[int]
    DISK_HITS_FIELD_NUMBER: _ClassVar[int]
    MISSES_FIELD_NUMBER: _ClassVar[int]
    COMPILES_FIELD_NUMBER: _ClassVar[int]
    COMPILE_FAILURES_FIELD_NUMBER: _ClassVar[int]
    COMPILE_MS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    MEMORY_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    DISK_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    DISK_BYTES_FIELD_NUMBER: _ClassVar[int]
    DISK_WRITE_FAILURES_FIELD_NUMBER: _ClassVar[int]
    UPTIME_S_FIELD_NUMBER: _ClassVar[int]
    TOOLCHAIN_FIELD_NUMBER: _ClassVar[int]
    CACHE_PATH_FIELD_NUMBER: _ClassVar[int]
    PCH_WARM_COMPILES_FIELD_NUMBER: _ClassVar[int]
    JOINED_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    WORKER_RESTARTS_FIELD_NUMBER: _ClassVar[int]
    WORKER_CRASHES_FIELD_NUMBER: _ClassVar[int]
    COMPILE_TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_DEPTH_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    WORKERS_BUSY_FIELD_NUMBER: _ClassVar[int]
    COMPILE_MS_P50_FIELD_NUMBER: _ClassVar[int]
    COMPILE_MS_P90_FIELD_NUMBER: _ClassVar[int]
    COMPILE_MS_P99_FIELD_NUMBER: _ClassVar[int]
    WORKER_STATUS_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    LINK_FAILURES_FIELD_NUMBER: _ClassVar[int]
    LINK_HITS_FIELD_NUMBER: _ClassVar[int]
    BUNDLES_FIELD_NUMBER: _ClassVar[int]
    TIERS_FIELD_NUMBER: _ClassVar[int]
    CORRUPTIONS_FIELD_NUMBER: _ClassVar[int]
    EVICTIONS_FIELD_NUMBER: _ClassVar[int]
    CACHE_DEGRADED_FIELD_NUMBER: _ClassVar[int]
    BITCODE_COMPILES_FIELD_NUMBER: _ClassVar[int]
    REMOTE_HITS_FIELD_NUMBER: _ClassVar[int]
    REMOTE_FIELD_NUMBER: _ClassVar[int]
    LISTENERS_FIELD_NUMBER: _ClassVar[int]
    UNAUTHENTICATED_CALLS_FIELD_NUMBER: _ClassVar[int]
    DENIED_CALLS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_IN_FLIGHT_REFUSALS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_RATE_REFUSALS_FIELD_NUMBER: _ClassVar[int]
    UNDECODABLE_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    OVERSIZED_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    MEMO_HITS_FIELD_NUMBER: _ClassVar[int]
    MEMO_MISSES_FIELD_NUMBER: _ClassVar[int]
    MEMO_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    MEMO_EVICTIONS_FIELD_NUMBER: _ClassVar[int]
    DIGEST_ONLY_REPLIES_FIELD_NUMBER: _ClassVar[int]
    BYTES_OMITTED_FIELD_NUMBER: _ClassVar[int]
    TUNING_TABLES_FIELD_NUMBER: _ClassVar[int]
    TUNING_DIGEST_FIELD_NUMBER: _ClassVar[int]
    AUTO_RESOLUTIONS_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_CANCELLED_FIELD_NUMBER: _ClassVar[int]
    COMPILES_CANCELLED_FIELD_NUMBER: _ClassVar[int]
    QUOTA_COMPILE_REFUSALS_FIELD_NUMBER: _ClassVar[int]
    QUOTA_BYTES_REFUSALS_FIELD_NUMBER: _ClassVar[int]
    CCCLS_FIELD_NUMBER: _ClassVar[int]
    requests: int
    invalid_requests: int
    memory_hits: int
    disk_hits: int
    misses: int
    compiles: int
    compile_failures: int
    compile_ms_total: float
    memory_entries: int
    memory_bytes: int
    disk_entries: int
    disk_bytes: int
    disk_write_failures: int
    uptime_s: float
    toolchain: Toolchain
    cache_path: str
    pch_warm_compiles: int
    joined_requests: int
    worker_restarts: int
    worker_crashes: int
    compile_timeouts: int
    queue_depth: int
    workers: int
    workers_busy: int
    compile_ms_p50: float
    compile_ms_p90: float
    compile_ms_p99: float
    worker_status: _containers.RepeatedCompositeFieldContainer[WorkerStatus]
    links: int
    link_failures: int
    link_hits: int
    bundles: int
    tiers: _containers.RepeatedCompositeFieldContainer[TierStats]
    corruptions: int
    evictions: int
    cache_degraded: bool
    bitcode_compiles: int
    remote_hits: int
    remote: RemoteTierStats
    listeners: _containers.RepeatedCompositeFieldContainer[Listener]
    unauthenticated_calls: int
    denied_calls: int
    client_in_flight_refusals: int
    client_rate_refusals: int
    undecodable_requests: int
    oversized_requests: int
    memo_hits: int
    memo_misses: int
    memo_entries: int
    memo_evictions: int
    digest_only_replies: int
    bytes_omitted: int
    tuning_tables: _containers.RepeatedCompositeFieldContainer[TuningTableInfo]
    tuning_digest: str
    auto_resolutions: int
    requests_cancelled: int
    compiles_cancelled: int
    quota_compile_refusals: int
    quota_bytes_refusals: int
    cccls: _containers.RepeatedCompositeFieldContainer[CcclInfo]
    def __init__(self, requests: _Optional[int] = ..., invalid_requests: _Optional[int] = ..., memory_hits: _Optional[int] = ..., disk_hits: _Optional[int] = ..., misses: _Optional[int] = ..., compiles: _Optional[int] = ..., compile_failures: _Optional[int] = ..., compile_ms_total: _Optional[float] = ..., memory_entries: _Optional[int] = ..., memory_bytes: _Optional[int] = ..., disk_entries: _Optional[int] = ..., disk_bytes: _Optional[int] = ..., disk_write_failures: _Optional[int] = ..., uptime_s: _Optional[float] = ..., toolchain: _Optional[_Union[Toolchain, _Mapping]] = ..., cache_path: _Optional[str] = ..., pch_warm_compiles: _Optional[int] = ..., joined_requests: _Optional[int] = ..., worker_restarts: _Optional[int] = ..., worker_crashes: _Optional[int] = ..., compile_timeouts: _Optional[int] = ..., queue_depth: _Optional[int] = ..., workers: _Optional[int] = ..., workers_busy: _Optional[int] = ..., compile_ms_p50: _Optional[float] = ..., compile_ms_p90: _Optional[float] = ..., compile_ms_p99: _Optional[float] = ..., worker_status: _Optional[_Iterable[_Union[WorkerStatus, _Mapping]]] = ..., links: _Optional[int] = ..., link_failures: _Optional[int] = ..., link_hits: _Optional[int] = ..., bundles: _Optional[int] = ..., tiers: _Optional[_Iterable[_Union[TierStats, _Mapping]]] = ..., corruptions: _Optional[int] = ..., evictions: _Optional[int] = ..., cache_degraded: bool = ..., bitcode_compiles: _Optional[int] = ..., remote_hits: _Optional[int] = ..., remote: _Optional[_Union[RemoteTierStats, _Mapping]] = ..., listeners: _Optional[_Iterable[_Union[Listener, _Mapping]]] = ..., unauthenticated_calls: _Optional[int] = ..., denied_calls: _Optional[int] = ..., client_in_flight_refusals: _Optional[int] = ..., client_rate_refusals: _Optional[int] = ..., undecodable_requests: _Optional[int] = ..., oversized_requests: _Optional[int] = ..., memo_hits: _Optional[int] = ..., memo_misses: _Optional[int] = ..., memo_entries: _Optional[int] = ..., memo_evictions: _Optional[int] = ..., digest_only_replies: _Optional[int] = ..., bytes_omitted: _Optional[int] = ..., tuning_tables: _Optional[_Iterable[_Union[TuningTableInfo, _Mapping]]] = ..., tuning_digest: _Optional[str] = ..., auto_resolutions: _Optional[int] = ..., requests_cancelled: _Optional[int] = ..., compiles_cancelled: _Optional[int] = ..., quota_compile_refusals: _Optional[int] = ..., quota_bytes_refusals: _Optional[int] = ..., cccls: _Optional[_Iterable[_Union[CcclInfo, _Mapping]]] = ...) -> None: ...

class TuningTableInfo(_message.Message):
    __slots__ = ("arch", "version", "digest", "source", "device", "cells", "placeholder")
    ARCH_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    CELLS_FIELD_NUMBER: _ClassVar[int]
    PLACEHOLDER_FIELD_NUMBER: _ClassVar[int]
    arch: str
    version: str
    digest: str
    source: str
    device: str
    cells: int
    placeholder: bool
    def __init__(self, arch: _Optional[str] = ..., version: _Optional[str] = ..., digest: _Optional[str] = ..., source: _Optional[str] = ..., device: _Optional[str] = ..., cells: _Optional[int] = ..., placeholder: bool = ...) -> None: ...

class Listener(_message.Message):
    __slots__ = ("address", "tls", "client_certificates", "tokens", "insecure", "mode")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    TLS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_CERTIFICATES_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    INSECURE_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    address: str
    tls: bool
    client_certificates: bool
    tokens: bool
    insecure: bool
    mode: str
    def __init__(self, address: _Optional[str] = ..., tls: bool = ..., client_certificates: bool = ..., tokens: bool = ..., insecure: bool = ..., mode: _Optional[str] = ...) -> None: ...

class RemoteTierStats(_message.Message):
    __slots__ = ("url", "cluster", "read_only", "healthy", "hits", "misses", "errors", "timeouts", "reconnects", "corruptions", "writes", "write_failures", "writes_skipped", "writes_dropped", "redirects", "slot_refreshes", "leases_acquired", "lease_waits", "lease_wait_hits", "lease_wait_timeouts", "lease_takeovers", "leases_lost")
    URL_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    MISSES_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    RECONNECTS_FIELD_NUMBER: _ClassVar[int]
    CORRUPTIONS_FIELD_NUMBER: _ClassVar[int]
    WRITES_FIELD_NUMBER: _ClassVar[int]
    WRITE_FAILURES_FIELD_NUMBER: _ClassVar[int]
    WRITES_SKIPPED_FIELD_NUMBER: _ClassVar[int]
    WRITES_DROPPED_FIELD_NUMBER: _ClassVar[int]
    REDIRECTS_FIELD_NUMBER: _ClassVar[int]
    SLOT_REFRESHES_FIELD_NUMBER: _ClassVar[int]
    LEASES_ACQUIRED_FIELD_NUMBER: _ClassVar[int]
    LEASE_WAITS_FIELD_NUMBER: _ClassVar[int]
    LEASE_WAIT_HITS_FIELD_NUMBER: _ClassVar[int]
    LEASE_WAIT_TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    LEASE_TAKEOVERS_FIELD_NUMBER: _ClassVar[int]
    LEASES_LOST_FIELD_NUMBER: _ClassVar[int]
    url: str
    cluster: bool
    read_only: bool
    healthy: bool
    hits: int
    misses: int
    errors: int
    timeouts: int
    reconnects: int
    corruptions: int
    writes: int
    write_failures: int
    writes_skipped: int
    writes_dropped: int
    redirects: int
    slot_refreshes: int
    leases_acquired: int
    lease_waits: int
    lease_wait_hits: int
    lease_wait_timeouts: int
    lease_takeovers: int
    leases_lost: int
    def __init__(self, url: _Optional[str] = ..., cluster: bool = ..., read_only: bool = ..., healthy: bool = ..., hits: _Optional[int] = ..., misses: _Optional[int] = ..., errors: _Optional[int] = ..., timeouts: _Optional[int] = ..., reconnects: _Optional[int] = ..., corruptions: _Optional[int] = ..., writes: _Optional[int] = ..., write_failures: _Optional[int] = ..., writes_skipped: _Optional[int] = ..., writes_dropped: _Optional[int] = ..., redirects: _Optional[int] = ..., slot_refreshes: _Optional[int] = ..., leases_acquired: _Optional[int] = ..., lease_waits: _Optional[int] = ..., lease_wait_hits: _Optional[int] = ..., lease_wait_timeouts: _Optional[int] = ..., lease_takeovers: _Optional[int] = ..., leases_lost: _Optional[int] = ...) -> None: ...

class WorkerStatus(_message.Message):
    __slots__ = ("pid", "busy", "jobs", "header_set")
    PID_FIELD_NUMBER: _ClassVar[int]
    BUSY_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    HEADER_SET_FIELD_NUMBER: _ClassVar[int]
    pid: int
    busy: bool
    jobs: int
    header_set: str
    def __init__(self, pid: _Optional[int] = ..., busy: bool = ..., jobs: _Optional[int] = ..., header_set: _Optional[str] = ...) -> None: ...

class PlanUse(_message.Message):
    __slots__ = ("name", "spec", "temp_storage", "first", "last", "count")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    TEMP_STORAGE_FIELD_NUMBER: _ClassVar[int]
    FIRST_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    spec: PrimitiveSpec
    temp_storage: TempStorage
    first: int
    last: int
    count: int
    def __init__(self, name: _Optional[str] = ..., spec: _Optional[_Union[PrimitiveSpec, _Mapping]] = ..., temp_storage: _Optional[_Union[TempStorage, _Mapping]] = ..., first: _Optional[int] = ..., last: _Optional[int] = ..., count: _Optional[int] = ...) -> None: ...

class PlanReservation(_message.Message):
    __slots__ = ("name", "bytes", "align", "count")
    NAME_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    ALIGN_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    bytes: int
    align: int
    count: int
    def __init__(self, name: _Optional[str] = ..., bytes: _Optional[int] = ..., align: _Optional[int] = ..., count: _Optional[int] = ...) -> None: ...

class PlanRequest(_message.Message):
    __slots__ = ("uses", "reservations", "base_offset", "client")
    USES_FIELD_NUMBER: _ClassVar[int]
    RESERVATIONS_FIELD_NUMBER: _ClassVar[int]
    BASE_OFFSET_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    uses: _containers.RepeatedCompositeFieldContainer[PlanUse]
    reservations: _containers.RepeatedCompositeFieldContainer[PlanReservation]
    base_offset: int
    client: str
    def __init__(self, uses: _Optional[_Iterable[_Union[PlanUse, _Mapping]]] = ..., reservations: _Optional[_Iterable[_Union[PlanReservation, _Mapping]]] = ..., base_offset: _Optional[int] = ..., client: _Optional[str] = ...) -> None: ...

class PlanRegion(_message.Message):
    __slots__ = ("name", "offset", "bytes", "align", "padding", "count", "stride", "first", "last", "artifact_key")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    ALIGN_FIELD_NUMBER: _ClassVar[int]
    PADDING_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    STRIDE_FIELD_NUMBER: _ClassVar[int]
    FIRST_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    ARTIFACT_KEY_FIELD_NUMBER: _ClassVar[int]
    name: str
    offset: int
    bytes: int
    align: int
    padding: int
    count: int
    stride: int
    first: int
    last: int
    artifact_key: str
    def __init__(self, name: _Optional[str] = ..., offset: _Optional[int] = ..., bytes: _Optional[int] = ..., align: _Optional[int] = ..., padding: _Optional[int] = ..., count: _Optional[int] = ..., stride: _Optional[int] = ..., first: _Optional[int] = ..., last: _Optional[int] = ..., artifact_key: _Optional[str] = ...) -> None: ...

class PlanResponse(_message.Message):
    __slots__ = ("reservations", "uses", "dynamic_shared_bytes", "base_align", "reserved_bytes", "no_reuse_bytes")
    RESERVATIONS_FIELD_NUMBER: _ClassVar[int]
    USES_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_SHARED_BYTES_FIELD_NUMBER: _ClassVar[int]
    BASE_ALIGN_FIELD_NUMBER: _ClassVar[int]
    RESERVED_BYTES_FIELD_NUMBER: _ClassVar[int]
    NO_REUSE_BYTES_FIELD_NUMBER: _ClassVar[int]
    reservations: _containers.RepeatedCompositeFieldContainer[PlanRegion]
    uses: _containers.RepeatedCompositeFieldContainer[PlanRegion]
    dynamic_shared_bytes: int
    base_align: int
    reserved_bytes: int
    no_reuse_bytes: int
    def __init__(self, reservations: _Optional[_Iterable[_Union[PlanRegion, _Mapping]]] = ..., uses: _Optional[_Iterable[_Union[PlanRegion, _Mapping]]] = ..., dynamic_shared_bytes: _Optional[int] = ..., base_align: _Optional[int] = ..., reserved_bytes: _Optional[int] = ..., no_reuse_bytes: _Optional[int] = ...) -> None: ...

class ErrorDetail(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: bytes
    def __init__(self, message: _Optional[bytes] = ...) -> None: ...

class AnyDetail(_message.Message):
    __slots__ = ("type_url", "value")
    TYPE_URL_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    type_url: str
    value: bytes
    def __init__(self, type_url: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...

class StatusDetails(_message.Message):
    __slots__ = ("code", "message", "details")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: bytes
    details: _containers.RepeatedCompositeFieldContainer[AnyDetail]
    def __init__(self, code: _Optional[int] = ..., message: _Optional[bytes] = ..., details: _Optional[_Iterable[_Union[AnyDetail, _Mapping]]] = ...) -> None: ...
