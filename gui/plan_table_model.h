#pragma once
// The plan table: a thin QAbstractTableModel over a SearchResult (one row per
// evaluated plan, in enumeration order, so row == index into SearchResult::all),
// and the proxy that sorts (numerically, plans without a time last) and filters
// (layout text, feasible only).

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <QStringList>
#include <memory>
#include <vector>

#include "search/search.h"

namespace dayzero::gui {

class PlanTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    Index,
    Devices,
    Layout,
    Weights,
    KvCache,
    Batch,
    MemGB,
    TtftS,
    TpotMs,
    TokS,
    TokSDev,
    Fits,
    MeetsSla,
    Pareto,
    ColumnCount
  };
  static constexpr int SortRole = Qt::UserRole;
  static constexpr int PlanIndexRole = Qt::UserRole + 1;
  static constexpr int FeasibleRole = Qt::UserRole + 2;

  explicit PlanTableModel(QObject* parent = nullptr);
  void setResult(std::shared_ptr<const search::SearchResult> result);
  const search::SearchResult* result() const { return result_.get(); }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const search::SearchResult> result_;
  QStringList layouts_;
  std::vector<char> on_front_;
};

class PlanFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit PlanFilterProxy(QObject* parent = nullptr);
  void setFeasibleOnly(bool on);
  bool feasibleOnly() const { return feasible_only_; }

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;
  bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;

 private:
  bool feasible_only_ = false;
};

// The rows and columns a view shows, as CSV (header first; fields quoted when needed).
QString table_to_csv(const QAbstractItemModel& model);

}  // namespace dayzero::gui
