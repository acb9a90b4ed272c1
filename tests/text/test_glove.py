"""GloVe from the package, or from a folder of its layout named by SENTENCE_LAB_GLOVE_DIR (the rows the GPU check
carries to a machine without the package)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sentence_lab.text import glove


@pytest.fixture
def fresh_glove_cache():
    glove.glove_words.cache_clear()
    glove.load_glove.cache_clear()
    yield
    glove.glove_words.cache_clear()
    glove.load_glove.cache_clear()


def test_a_folder_named_by_the_variable_replaces_the_package(tmp_path, monkeypatch, fresh_glove_cache):
    words = ["the", "river", "n't"]
    vectors = np.arange(150, dtype=np.float32).reshape(3, 50)
    pq.write_table(pa.table({"index": words}), tmp_path / glove.INDEX_FILE)
    np.save(tmp_path / glove.VECTORS_FILE, vectors)
    monkeypatch.setenv(glove.GLOVE_DIR_VARIABLE, str(tmp_path))
    assert glove.glove_words() == tuple(words)
    matrix, found = glove.glove_matrix_for(["River", "boat", "n't"], np.zeros((3, 50), dtype=np.float32))
    assert found == 2
    np.testing.assert_array_equal(matrix[0], vectors[1])
    np.testing.assert_array_equal(matrix[1], 0)
    np.testing.assert_array_equal(matrix[2], vectors[2])


def test_a_folder_without_the_files_is_refused_in_one_line_naming_the_variable(tmp_path, monkeypatch,
                                                                               fresh_glove_cache):
    monkeypatch.setenv(glove.GLOVE_DIR_VARIABLE, str(tmp_path))
    with pytest.raises(FileNotFoundError) as err:
        glove.load_glove()
    message = str(err.value)
    assert glove.GLOVE_DIR_VARIABLE in message and "--prepare" in message and "\n" not in message
