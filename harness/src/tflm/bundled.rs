//! What the bundled TFLM knows: the builtin operator codes of its schema and
//! the operators (and versions) its `AllOpsResolver` registers. Generated from
//! `tensorflow/lite/schema/schema_generated.h` and
//! `tensorflow/lite/micro/kernels/all_ops_resolver.cc` of the tfmicro 0.1.0
//! archive (TensorFlow 33689c48ad); regenerate both tables when the TFLM
//! tree changes.

/// Builtin operator names by code.
pub const BUILTIN_NAMES: &[(i32, &str)] = &[
    (0, "ADD"),
    (1, "AVERAGE_POOL_2D"),
    (2, "CONCATENATION"),
    (3, "CONV_2D"),
    (4, "DEPTHWISE_CONV_2D"),
    (5, "DEPTH_TO_SPACE"),
    (6, "DEQUANTIZE"),
    (7, "EMBEDDING_LOOKUP"),
    (8, "FLOOR"),
    (9, "FULLY_CONNECTED"),
    (10, "HASHTABLE_LOOKUP"),
    (11, "L2_NORMALIZATION"),
    (12, "L2_POOL_2D"),
    (13, "LOCAL_RESPONSE_NORMALIZATION"),
    (14, "LOGISTIC"),
    (15, "LSH_PROJECTION"),
    (16, "LSTM"),
    (17, "MAX_POOL_2D"),
    (18, "MUL"),
    (19, "RELU"),
    (20, "RELU_N1_TO_1"),
    (21, "RELU6"),
    (22, "RESHAPE"),
    (23, "RESIZE_BILINEAR"),
    (24, "RNN"),
    (25, "SOFTMAX"),
    (26, "SPACE_TO_DEPTH"),
    (27, "SVDF"),
    (28, "TANH"),
    (29, "CONCAT_EMBEDDINGS"),
    (30, "SKIP_GRAM"),
    (31, "CALL"),
    (32, "CUSTOM"),
    (33, "EMBEDDING_LOOKUP_SPARSE"),
    (34, "PAD"),
    (35, "UNIDIRECTIONAL_SEQUENCE_RNN"),
    (36, "GATHER"),
    (37, "BATCH_TO_SPACE_ND"),
    (38, "SPACE_TO_BATCH_ND"),
    (39, "TRANSPOSE"),
    (40, "MEAN"),
    (41, "SUB"),
    (42, "DIV"),
    (43, "SQUEEZE"),
    (44, "UNIDIRECTIONAL_SEQUENCE_LSTM"),
    (45, "STRIDED_SLICE"),
    (46, "BIDIRECTIONAL_SEQUENCE_RNN"),
    (47, "EXP"),
    (48, "TOPK_V2"),
    (49, "SPLIT"),
    (50, "LOG_SOFTMAX"),
    (51, "DELEGATE"),
    (52, "BIDIRECTIONAL_SEQUENCE_LSTM"),
    (53, "CAST"),
    (54, "PRELU"),
    (55, "MAXIMUM"),
    (56, "ARG_MAX"),
    (57, "MINIMUM"),
    (58, "LESS"),
    (59, "NEG"),
    (60, "PADV2"),
    (61, "GREATER"),
    (62, "GREATER_EQUAL"),
    (63, "LESS_EQUAL"),
    (64, "SELECT"),
    (65, "SLICE"),
    (66, "SIN"),
    (67, "TRANSPOSE_CONV"),
    (68, "SPARSE_TO_DENSE"),
    (69, "TILE"),
    (70, "EXPAND_DIMS"),
    (71, "EQUAL"),
    (72, "NOT_EQUAL"),
    (73, "LOG"),
    (74, "SUM"),
    (75, "SQRT"),
    (76, "RSQRT"),
    (77, "SHAPE"),
    (78, "POW"),
    (79, "ARG_MIN"),
    (80, "FAKE_QUANT"),
    (81, "REDUCE_PROD"),
    (82, "REDUCE_MAX"),
    (83, "PACK"),
    (84, "LOGICAL_OR"),
    (85, "ONE_HOT"),
    (86, "LOGICAL_AND"),
    (87, "LOGICAL_NOT"),
    (88, "UNPACK"),
    (89, "REDUCE_MIN"),
    (90, "FLOOR_DIV"),
    (91, "REDUCE_ANY"),
    (92, "SQUARE"),
    (93, "ZEROS_LIKE"),
    (94, "FILL"),
    (95, "FLOOR_MOD"),
    (96, "RANGE"),
    (97, "RESIZE_NEAREST_NEIGHBOR"),
    (98, "LEAKY_RELU"),
    (99, "SQUARED_DIFFERENCE"),
    (100, "MIRROR_PAD"),
    (101, "ABS"),
    (102, "SPLIT_V"),
    (103, "UNIQUE"),
    (104, "CEIL"),
    (105, "REVERSE_V2"),
    (106, "ADD_N"),
    (107, "GATHER_ND"),
    (108, "COS"),
    (109, "WHERE"),
    (110, "RANK"),
    (111, "ELU"),
    (112, "REVERSE_SEQUENCE"),
    (113, "MATRIX_DIAG"),
    (114, "QUANTIZE"),
    (115, "MATRIX_SET_DIAG"),
    (116, "ROUND"),
    (117, "HARD_SWISH"),
    (118, "IF"),
    (119, "WHILE"),
    (120, "NON_MAX_SUPPRESSION_V4"),
    (121, "NON_MAX_SUPPRESSION_V5"),
    (122, "SCATTER_ND"),
    (123, "SELECT_V2"),
    (124, "DENSIFY"),
    (125, "SEGMENT_SUM"),
    (126, "BATCH_MATMUL"),
];

/// Registered builtin operators: code, lowest and highest version.
pub const REGISTERED: &[(i32, i32, i32)] = &[
    (0, 1, 2),   // ADD
    (1, 1, 2),   // AVERAGE_POOL_2D
    (2, 1, 3),   // CONCATENATION
    (3, 1, 3),   // CONV_2D
    (4, 1, 3),   // DEPTHWISE_CONV_2D
    (6, 1, 2),   // DEQUANTIZE
    (8, 1, 1),   // FLOOR
    (9, 1, 4),   // FULLY_CONNECTED
    (11, 1, 1),  // L2_NORMALIZATION
    (14, 1, 2),  // LOGISTIC
    (17, 1, 2),  // MAX_POOL_2D
    (18, 1, 3),  // MUL
    (19, 1, 1),  // RELU
    (21, 1, 1),  // RELU6
    (22, 1, 1),  // RESHAPE
    (25, 1, 2),  // SOFTMAX
    (27, 1, 3),  // SVDF
    (28, 1, 1),  // TANH
    (34, 1, 2),  // PAD
    (40, 1, 1),  // MEAN
    (41, 1, 2),  // SUB
    (45, 1, 1),  // STRIDED_SLICE
    (49, 1, 3),  // SPLIT
    (54, 1, 1),  // PRELU
    (55, 1, 1),  // MAXIMUM
    (56, 1, 1),  // ARG_MAX
    (57, 1, 1),  // MINIMUM
    (58, 1, 2),  // LESS
    (59, 1, 1),  // NEG
    (60, 1, 2),  // PADV2
    (61, 1, 2),  // GREATER
    (62, 1, 2),  // GREATER_EQUAL
    (63, 1, 2),  // LESS_EQUAL
    (66, 1, 1),  // SIN
    (71, 1, 2),  // EQUAL
    (72, 1, 2),  // NOT_EQUAL
    (73, 1, 1),  // LOG
    (75, 1, 1),  // SQRT
    (76, 1, 1),  // RSQRT
    (79, 1, 1),  // ARG_MIN
    (83, 1, 2),  // PACK
    (84, 1, 1),  // LOGICAL_OR
    (86, 1, 1),  // LOGICAL_AND
    (87, 1, 1),  // LOGICAL_NOT
    (88, 1, 2),  // UNPACK
    (92, 1, 1),  // SQUARE
    (97, 1, 2),  // RESIZE_NEAREST_NEIGHBOR
    (101, 1, 1), // ABS
    (104, 1, 1), // CEIL
    (108, 1, 1), // COS
    (114, 1, 1), // QUANTIZE
    (116, 1, 1), // ROUND
];

/// Name of a builtin operator code.
pub fn builtin_name(code: i32) -> String {
    BUILTIN_NAMES
        .iter()
        .find(|(c, _)| *c == code)
        .map_or_else(|| format!("builtin {code}"), |(_, name)| (*name).to_owned())
}
